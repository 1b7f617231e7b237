package cli

import (
	"flag"
	"io"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/droverhq/drover/internal/logging"
	"github.com/droverhq/drover/internal/memlimit"
)

// logOptions: human output goes to stdout, structured logs to stderr, in --log-format at -v.
// drover server and drover agent also take controller-runtime's --zap-* flags, which win.
type logOptions struct {
	format  string
	v       int
	zap     zap.Options
	verbose bool // deprecated --verbose of server and agent: -v=1
}

func (l *logOptions) addFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&l.format, "log-format", "text", "log format on stderr: text or json")
	f.IntVarP(&l.v, "v", "v", 0, "log verbosity: 0 info, 1 debug, higher more detail up to 7 (-v alone: 1; -v N or -v=N, as kubectl; never API request bodies, which hold secrets)")
	f.Lookup("v").NoOptDefVal = "1"
}

// addZapFlags binds controller-runtime's zap flags (--zap-log-level, --zap-encoder,
// --zap-devel, --zap-stacktrace-level, --zap-time-encoding) on a long-running command.
func (l *logOptions) addZapFlags(cmd *cobra.Command) {
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	l.zap.BindFlags(fs)
	cmd.Flags().AddGoFlagSet(fs)
	cmd.Flags().BoolVar(&l.verbose, "verbose", false, "debug logging")
	_ = cmd.Flags().MarkDeprecated("verbose", "use -v")
}

// logger builds the logger for cmd, writing to w.
func (l *logOptions) logger(cmd *cobra.Command, w io.Writer) (logr.Logger, error) {
	opts := l.zap
	changed := func(name string) bool { f := cmd.Flags().Lookup(name); return f != nil && f.Changed }
	if !changed("zap-encoder") {
		switch l.format {
		case "json":
			opts.NewEncoder = nil
			zap.JSONEncoder()(&opts)
		case "text":
			zap.ConsoleEncoder()(&opts)
		default:
			return logr.Logger{}, usageErrorf("--log-format %s: use text or json", l.format)
		}
	}
	if !changed("zap-log-level") {
		v := l.v
		if l.verbose && v < 1 {
			v = 1
		}
		opts.Level = zapcore.Level(-v)
		// The demo is watched in a terminal: its summary and links, not the controllers' logs
		// (what make demo passes); -v or --zap-log-level bring them back.
		if demo := cmd.Flags().Lookup("demo"); demo != nil && demo.Value.String() == "true" && !changed("v") && !l.verbose {
			opts.Level = zapcore.ErrorLevel
			if !changed("zap-stacktrace-level") {
				opts.StacktraceLevel = zapcore.PanicLevel
			}
		}
	}
	opts.DestWriter = w
	return logging.Capped(zap.New(zap.UseFlagOptions(&opts))), nil
}

// setup installs the logger of cmd as controller-runtime's (and so the one ctrl.LoggerFrom
// returns) on stderr.
func (l *logOptions) setup(cmd *cobra.Command) error {
	log, err := l.logger(cmd, os.Stderr)
	if err != nil {
		return err
	}
	setLoggerMu.Lock()
	defer setLoggerMu.Unlock()
	ctrl.SetLogger(logging.QuietRelease(log))
	return nil
}

// setLoggerMu serialises ctrl.SetLogger, whose first calls race with each other: one command per
// process never meets that, but tests run commands in parallel in one process.
var setLoggerMu sync.Mutex

// cgroupRoot is where setMemoryLimit reads the container's memory limit (a variable for tests).
var cgroupRoot = memlimit.CgroupRoot

// setMemoryLimit gives the Go runtime a soft memory limit below the container's, so that a
// long-running command collects garbage harder near its limit instead of being OOM-killed
// (internal/memlimit); GOMEMLIMIT, when set, wins.
func setMemoryLimit() {
	limit, container, err := memlimit.Set(cgroupRoot, os.Getenv)
	switch {
	case err != nil:
		ctrl.Log.Info("No Go memory limit set: set GOMEMLIMIT to choose one", "reason", err.Error())
	case limit > 0:
		ctrl.Log.Info("Go memory limit set below the container's", "limit", limit, "containerLimit", container, "ratio", memlimit.Ratio)
	}
}
