package cli

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes of drover, documented in docs/cli.md. Scripts branch on them.
const (
	ExitOK       = 0 // success
	ExitError    = 1 // any other error (not found, API error, bad input file)
	ExitUsage    = 2 // the command line is wrong: unknown flag or command, missing or conflicting flags
	ExitNotReady = 3 // a wait ended before the object was ready (timeout), or it failed
	ExitRefused  = 4 // a plan refused the change (migration preflight)
	// drover bundle diff exits as diff(1) and kubectl diff do: ExitOK when there is no
	// difference, ExitDiffers when there are, and above 1 when it could not compare.
	ExitDiffers    = 1 // bundle diff: the change would alter the cluster
	ExitDiffFailed = 5 // bundle diff: any error but a usage error (which stays ExitUsage)
)

// ExitError is an error with the exit code drover ends with.
type exitError struct {
	code int
	err  error
	// quiet: an outcome, not a failure; nothing is printed on stderr.
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so drover exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func usageErrorf(format string, a ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, a...))
}

// ExitCode is the exit code for err: the code of the first exitError in its chain, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	if strings.HasPrefix(err.Error(), "required flag(s)") {
		return ExitUsage // cobra's own check of MarkFlagRequired, an untyped error
	}
	return ExitError
}
