// Package migration runs the in-tree AWS → out-of-tree AWS CCM migration (SPEC §3) as a step
// engine: steps 0–6, each with a precondition, an action, a verification and a rollback, with
// progress persisted before and after every action so a restart resumes without repeating one.
//
// Distributions (internal/migration/rke2, internal/migration/rke1) supply the configuration
// document and its edits; internal/migration/checks inspects the downstream cluster.
package migration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// Steps.
const (
	StepPreflight = iota
	StepEnableLeaderMigration
	StepCordon
	StepInstallCCM
	StepSwitchProvider
	StepUncordon
	StepDisableCCMLeaderMigration
	NumSteps
)

// StepNames are the stable step names (status, CLI output, condition reasons).
var StepNames = [NumSteps]string{
	"Preflight", "EnableLeaderMigration", "CordonControlPlane", "InstallCCM",
	"SwitchProvider", "UncordonControlPlane", "DisableCCMLeaderMigration",
}

// Params is what the distribution edits need from the migration's spec.
type Params struct {
	LeaderMigration   bool
	KubernetesVersion string // target version, empty: keep
	CCM               migrationv1alpha1.CCMSettings
	// ImageTag is the CCM image tag (resolved: spec or v1.<minor>.0).
	ImageTag string
}

// DocInfo is what the engine reads from a configuration document.
type DocInfo struct {
	KubernetesVersion string
	// Provider is the configured cloud provider: "aws" (in-tree), "external", "external-aws" or "".
	Provider string
}

// InTree reports whether the document still configures the in-tree AWS provider.
func (i DocInfo) InTree() bool { return i.Provider == "aws" }

// Backend stores a configuration document and gets it applied.
type Backend interface {
	// Read returns the current document.
	Read(ctx context.Context) ([]byte, error)
	// Write stores doc and starts applying it. Writing the current document again is a no-op.
	// doc is derived from the last Read: a backend whose document others edit too (a live
	// object) returns an error wrapping ErrConflict if it changed since, rather than overwrite
	// that edit; the caller reads again and re-applies its change.
	Write(ctx context.Context, doc []byte) error
	// Applied reports whether the last written document has been applied; msg says what is
	// pending otherwise.
	Applied(ctx context.Context) (ok bool, msg string, err error)
}

// ErrConflict means the document changed since the Read a written document was derived from.
var ErrConflict = errors.New("the configuration changed since it was read")

// Distribution is one distribution's document format and behaviour.
type Distribution interface {
	Backend
	Kind() migrationv1alpha1.Distribution
	// ControlPlaneLabel is the node label (key=value) of control-plane nodes.
	ControlPlaneLabel() string
	// Inspect reads the version and provider of doc.
	Inspect(doc []byte) (DocInfo, error)
	// Edit returns doc with step's configuration change made; unchanged if the step changes no
	// configuration. Edits are idempotent and merge with what is there.
	Edit(doc []byte, step int, p Params) ([]byte, error)
	// KeepsNodeName reports whether the document pins node's name (RKE1 hostname_override).
	KeepsNodeName(doc []byte, node string) bool
	// MirrorPods reports whether kube-controller-manager runs as a static (mirror) pod.
	MirrorPods() bool
}

// DocChecker is implemented by distributions whose document itself can make the migration
// fail (RKE1 node entries): CheckDoc returns the preflight refusals.
type DocChecker interface {
	CheckDoc(doc []byte) []string
}

// CCMInstaller is implemented by distributions that install the CCM outside the document
// (RKE1: Helm).
type CCMInstaller interface {
	InstallCCM(ctx context.Context, values []byte, p Params) error
	UninstallCCM(ctx context.Context) error
	// InstallCommand describes the install for the plan.
	InstallCommand(p Params) string
}

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+)?`)

// Minor returns the minor version of a Kubernetes/RKE2/RKE version string (v1.26.15+rke2r1,
// v1.26.15-rancher1-1).
func Minor(v string) (int, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil || m[1] != "1" {
		return 0, fmt.Errorf("cannot parse Kubernetes version %q", v)
	}
	return strconv.Atoi(m[2])
}

// CCMValues renders the aws-cloud-controller-manager chart values (Rancher's recommended
// values) for a distribution's control-plane label, with or without leader migration.
func CCMValues(controlPlaneLabel string, p Params, leaderMigration bool) []byte {
	k, v, _ := strings.Cut(controlPlaneLabel, "=")
	args := []string{"--v=2", "--cloud-provider=aws", "--configure-cloud-routes=false", "--use-service-account-credentials=true"}
	if leaderMigration {
		args = append(args, "--enable-leader-migration=true")
	}
	args = append(args, p.CCM.ExtraArgs...)
	values := map[string]any{
		"hostNetworking": true,
		"image":          map[string]any{"tag": p.ImageTag},
		"args":           args,
		"nodeSelector":   map[string]any{k: v},
		"tolerations": []any{
			map[string]any{"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
			map[string]any{"key": k, "value": v, "effect": "NoSchedule"},
			map[string]any{"key": k, "value": v, "effect": "NoExecute"},
		},
		"clusterRoleRules": ccmClusterRoleRules(),
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		panic(err) // plain maps always marshal
	}
	return out
}

// ccmClusterRoleRules is the chart's default ClusterRole plus "get" on serviceaccounts, which
// the CCM needs at startup (Rancher docs).
func ccmClusterRoleRules() []any {
	rule := func(groups []string, res []string, verbs ...string) map[string]any {
		return map[string]any{"apiGroups": groups, "resources": res, "verbs": verbs}
	}
	return []any{
		rule([]string{""}, []string{"events"}, "create", "patch", "update"),
		rule([]string{""}, []string{"nodes"}, "*"),
		rule([]string{""}, []string{"nodes/status"}, "patch"),
		rule([]string{""}, []string{"services"}, "list", "patch", "update", "watch"),
		rule([]string{""}, []string{"services/status"}, "list", "patch", "update", "watch"),
		rule([]string{""}, []string{"serviceaccounts"}, "create", "get"),
		rule([]string{""}, []string{"persistentvolumes"}, "get", "list", "update", "watch"),
		rule([]string{""}, []string{"endpoints"}, "create", "get", "list", "watch", "update"),
		rule([]string{"coordination.k8s.io"}, []string{"leases"}, "create", "get", "list", "watch", "update"),
		rule([]string{""}, []string{"serviceaccounts/token"}, "create"),
	}
}

// Runner runs a command (argv[0] is the program).
type Runner func(ctx context.Context, argv []string) error

type runnerKey struct{}

// WithRunner returns ctx carrying run, which commands built from ctx (the CLI's apply and Helm
// commands) use instead of ExecRunner: tests put a distribution simulator there.
func WithRunner(ctx context.Context, run Runner) context.Context {
	return context.WithValue(ctx, runnerKey{}, run)
}

// RunnerFrom returns the Runner set by WithRunner, or nil.
func RunnerFrom(ctx context.Context) Runner {
	run, _ := ctx.Value(runnerKey{}).(Runner)
	return run
}

// CommandError is a command drover ran (the apply command, Helm) that failed. The engine
// retries it (the cause may be passing) for at most the step timeout, then fails the step.
type CommandError struct {
	Argv []string
	Err  error
	// Output is the last lines of the command's output ("" if unknown).
	Output string
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("command %q failed: %v", strings.Join(e.Argv, " "), e.Err)
	if e.Output != "" {
		msg += "; its output ended with:\n" + e.Output
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// RunCommand runs argv with run (nil: ExecRunner), wrapping a failure in a *CommandError.
func RunCommand(ctx context.Context, run Runner, argv []string) error {
	if run == nil {
		run = ExecRunner
	}
	err := run(ctx, argv)
	if err == nil || ctx.Err() != nil {
		return err
	}
	var ce *CommandError
	if errors.As(err, &ce) {
		return err
	}
	return &CommandError{Argv: argv, Err: err}
}

// tailLines is how many lines of a failed command's output its error keeps.
const tailLines = 10

// tailWriter keeps the last bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf); n > 8192 {
		t.buf = append([]byte(nil), t.buf[n-8192:]...)
	}
	return len(p), nil
}

// lines returns the last n non-empty lines written.
func (t *tailWriter) lines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.TrimSpace(strings.Join(all, "\n"))
}

// ExecRunner runs commands as child processes, output to the process's stderr; a failure is a
// *CommandError carrying the output's last lines.
func ExecRunner(ctx context.Context, argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	tail := &tailWriter{}
	w := io.MultiWriter(os.Stderr, tail)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return &CommandError{Argv: argv, Err: err, Output: tail.lines(tailLines)}
	}
	return nil
}

// Expand splits a command template on spaces and replaces {key} placeholders.
func Expand(template string, vars map[string]string) []string {
	f := strings.Fields(template)
	for i := range f {
		for k, v := range vars {
			f[i] = strings.ReplaceAll(f[i], "{"+k+"}", v)
		}
	}
	return f
}

// FileBackend is a document in a file, applied by running Command ({file} is replaced by the
// path). Every Write runs the command: apply commands (rke up, kubectl apply) are idempotent,
// and skipping one after a crash between write and apply would leave the file unapplied.
type FileBackend struct {
	Path    string
	Command string
	Run     Runner
}

// Read returns the file.
func (f *FileBackend) Read(context.Context) ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Path, err)
	}
	return b, nil
}

// Write replaces the file and runs the apply command, if the document changed or an earlier
// apply did not finish (a marker file is kept from the write until the command succeeds, so a
// crash in between is not mistaken for "already applied").
func (f *FileBackend) Write(ctx context.Context, doc []byte) error {
	pending := f.Path + ".apply-pending"
	cur, err := os.ReadFile(f.Path)
	if err == nil && string(cur) == string(doc) {
		if _, err := os.Stat(pending); os.IsNotExist(err) {
			return nil
		}
	} else {
		if err := WriteFileAtomic(pending, nil); err != nil {
			return err
		}
		if err := WriteFileAtomic(f.Path, doc); err != nil {
			return err
		}
	}
	if err := RunCommand(ctx, f.Run, Expand(f.Command, map[string]string{"file": f.Path})); err != nil {
		return err
	}
	if err := os.Remove(pending); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", pending, err)
	}
	return nil
}

// Applied means the apply command returned successfully.
func (f *FileBackend) Applied(context.Context) (bool, string, error) { return true, "", nil }
