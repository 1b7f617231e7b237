package logging

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// stopping is set once the process has been asked to stop (Stopping).
var stopping atomic.Bool

// Stopping records that the process has been asked to stop (SIGINT, SIGTERM): from then on,
// QuietRelease loggers log the errors a stop itself causes at info level.
func Stopping() { stopping.Store(true) }

// QuietRelease returns l with the errors a clean stop causes logged as what they are, at info
// level with their error, instead of as errors with a stack trace, so that a clean stop does not
// look like a crash:
//   - a manager that holds the leader Lease releases it when stopped, and its leader elector then
//     reports "leader election lost", which the manager logs as an error because its stop had
//     already begun (a Lease lost while running still stops the manager with that error, which
//     is returned, not logged here);
//   - once the process is stopping (Stopping), controllers still starting report their informers'
//     cancelled cache sync ("failed waiting for ... Informer to sync") and cancelled contexts.
//
// The same errors before a stop (an informer that cannot sync for lack of RBAC) stay errors.
func QuietRelease(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(quietRelease{l.GetSink()})
}

const (
	afterStopMsg  = "error received after stop sequence was engaged"
	leaderLostMsg = "leader election lost"
)

type quietRelease struct{ sink logr.LogSink }

func (q quietRelease) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	q.sink.Init(info)
}

func (q quietRelease) Enabled(level int) bool { return q.sink.Enabled(level) }

func (q quietRelease) Info(level int, msg string, kv ...any) { q.sink.Info(level, msg, kv...) }

func (q quietRelease) Error(err error, msg string, kv ...any) {
	switch {
	case msg == afterStopMsg && err != nil && err.Error() == leaderLostMsg:
		q.sink.Info(0, "Released the leader Lease while stopping", kv...)
	case stopping.Load() && stopNoise(err) && msg == afterStopMsg:
		q.sink.Info(0, "A controller still starting was stopped", append(kv, "error", err.Error())...)
	case stopping.Load() && stopNoise(err):
		q.sink.Info(0, msg+" (stopping)", append(kv, "error", err.Error())...)
	default:
		q.sink.Error(err, msg, kv...)
	}
}

// stopNoise: err is what cancelling a starting controller gives.
func stopNoise(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "failed waiting for") && strings.Contains(s, "Informer to sync") ||
		strings.Contains(s, "cache did not sync")
}

func (q quietRelease) WithValues(kv ...any) logr.LogSink {
	return quietRelease{q.sink.WithValues(kv...)}
}

func (q quietRelease) WithName(name string) logr.LogSink { return quietRelease{q.sink.WithName(name)} }

func (q quietRelease) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := q.sink.(logr.CallDepthLogSink); ok {
		return quietRelease{cd.WithCallDepth(depth)}
	}
	return q
}
