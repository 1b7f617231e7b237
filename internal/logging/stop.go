package logging

import "github.com/go-logr/logr"

// QuietRelease returns l with one controller-runtime message made what it is. A manager that
// holds the leader Lease and is stopped (Ctrl-C, a rolling update) releases the Lease, and its
// leader elector then reports "leader election lost", which the manager logs as an error, with a
// stack trace, because its stop had already begun. Nothing was lost: that line is logged at
// info level instead, so that a clean stop does not look like a crash. A Lease lost while
// running still stops the manager with that error, which is returned, not logged here.
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
	if msg == afterStopMsg && err != nil && err.Error() == leaderLostMsg {
		q.sink.Info(0, "Released the leader Lease while stopping", kv...)
		return
	}
	q.sink.Error(err, msg, kv...)
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
