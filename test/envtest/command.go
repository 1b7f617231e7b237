package envtest

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CommandResult is what a user sees of one command.
type CommandResult struct {
	Stdout, Stderr string
	Code           int
}

// RunCommand runs bin with args and env (nil: the test's own environment) for at most timeout.
// A non-zero exit is a result; a command that cannot run at all fails the test.
func RunCommand(t testing.TB, timeout time.Duration, env []string, bin string, args ...string) CommandResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := CommandResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		r.Code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return r
}
