// Package logging holds what every drover process does to its logger.
package logging

import "github.com/go-logr/logr"

// MaxVerbosity is the highest log verbosity drover emits. From 8 on, client-go logs the bodies
// of API requests and responses, Secrets and token requests included (kubectl -v=8 does the
// same); a server's logs are shipped and kept, so drover never lets them through, whatever -v
// or --zap-log-level say.
const MaxVerbosity = 7

// Capped returns l emitting nothing above MaxVerbosity.
func Capped(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(capped{l.GetSink()})
}

type capped struct{ sink logr.LogSink }

func (c capped) Init(info logr.RuntimeInfo) {
	// One more frame: this wrapper's own.
	info.CallDepth++
	c.sink.Init(info)
}

func (c capped) Enabled(level int) bool { return level <= MaxVerbosity && c.sink.Enabled(level) }

func (c capped) Info(level int, msg string, kv ...any) {
	if level <= MaxVerbosity {
		c.sink.Info(level, msg, kv...)
	}
}

func (c capped) Error(err error, msg string, kv ...any) { c.sink.Error(err, msg, kv...) }

func (c capped) WithValues(kv ...any) logr.LogSink { return capped{c.sink.WithValues(kv...)} }

func (c capped) WithName(name string) logr.LogSink { return capped{c.sink.WithName(name)} }

func (c capped) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := c.sink.(logr.CallDepthLogSink); ok {
		return capped{cd.WithCallDepth(depth)}
	}
	return c
}
