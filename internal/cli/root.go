// Package cli is drover's command line: a thin cobra layer over the packages that do the work.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/logging"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/internal/version"
)

// NewRootCommand returns the drover command with every subcommand.
func NewRootCommand() *cobra.Command {
	root, _ := newRoot()
	return root
}

func newRoot() (*cobra.Command, *kubeOptions) {
	root, k, _ := newRootWithLogs()
	return root, k
}

func newRootWithLogs() (*cobra.Command, *kubeOptions, *logOptions) {
	root := &cobra.Command{
		Use:           "drover",
		Short:         "drover: a Kubernetes-native control plane for fleets of clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	k := newKubeOptions()
	k.addFlags(root)
	logs := &logOptions{}
	logs.addFlags(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return logs.setup(cmd) }
	root.AddCommand(newServerCommand(k, logs), newVersionCommand(k), newClusterCommand(k), newCloudsimCommand())
	root.AddCommand(newAgentCommand(k, logs), newMigrateCommand(k))
	root.AddCommand(newBundleCommand(k), newFleetCommand(k), newTokenCommand(k))
	root.AddCommand(newGitRepoCommand(k))
	root.AddCommand(newDashboardCommand(k), newCheckCommand(k))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	// cobra adds its completion command at Execute; added now, it gets the usage codes too
	// (`drover completion ksh` printed help and exited 0).
	root.InitDefaultCompletionCmd()
	usageCodes(root)
	return root, k, logs
}

// usageCodes makes argument errors exit with ExitUsage, and gives command groups (cluster,
// bundle, ...) a usage error for an unknown subcommand instead of help with exit 0.
func usageCodes(cmd *cobra.Command) {
	if validate := cmd.Args; validate != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			return withCode(ExitUsage, validate(c, args))
		}
	}
	if !cmd.Runnable() && cmd.HasSubCommands() {
		cmd.SuggestionsMinimumDistance = 2 // kubectl's "did you mean"
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				if s := c.SuggestionsFor(args[0]); len(s) > 0 {
					return usageErrorf("unknown command %q for %q; did you mean %q?", args[0], c.CommandPath(), s[0])
				}
				return usageErrorf("unknown command %q for %q", args[0], c.CommandPath())
			}
			return c.Help()
		}
	}
	for _, sub := range cmd.Commands() {
		usageCodes(sub)
	}
}

// Main runs the command line with args and returns the exit code (see ExitOK and the others,
// documented in docs/cli.md). SIGINT/SIGTERM cancel the
// command's context, so long-running commands stop cleanly.
func Main(args []string) int {
	// The stop is recorded before the context is cancelled, so that no controller's report of
	// its cancelled start is logged as an error in between.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			logging.Stopping()
			cancel()
		case <-ctx.Done():
		}
	}()
	return mainWith(ctx, args, os.Stdout, os.Stderr)
}

// mainWith is Main with its output streams, which print through terminalSafe.
func mainWith(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out, errOut := terminalSafe{stdout}, terminalSafe{stderr}
	cmd := NewRootCommand()
	cmd.SetArgs(verbosityArgs(args))
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	return exit(cmd.ExecuteContext(ctx), errOut)
}

// verbosityArgs accepts kubectl's "-v 4" (and "--v 4") as "-v=4": -v alone means 1, so the flag
// cannot take a separate value by itself. Arguments after "--" are left alone.
func verbosityArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "-v" || a == "--v") && i+1 < len(args) && isDigits(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// exit reports err on stderr and maps it to drover's exit code, once for every command.
func exit(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	if e := (*exitError)(nil); errors.As(err, &e) && e.quiet {
		return code
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	if code == ExitUsage {
		fmt.Fprintln(stderr, "Run with --help for usage.")
	}
	return code
}

func newVersionCommand(k *kubeOptions) *cobra.Command {
	var output string
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print drover's version, git commit, Go version and Kubernetes version, and the management cluster's",
		Long: `Print this drover binary's version, git commit, Go version and the Kubernetes version it was
built against; then, as kubectl does, the management cluster's: the drover version that last
applied drover's CRDs there (the server's, annotation fleet.drover.io/version) and its Kubernetes
version. Without a kubeconfig, or with --client, only this binary's. A management cluster that
does not answer is an error (exit 1), after this binary's version.`,
		Example: "  drover version\n  drover version --client -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return usageErrorf("-o %s: unknown output format (use json or yaml, or leave it out)", output)
			}
			v := versionOutput{Info: buildInfo()}
			var serverErr error
			if !clientOnly {
				v.Server, serverErr = serverVersion(cmd.Context(), k)
			}
			switch output {
			case "":
				if _, err := fmt.Fprint(cmd.OutOrStdout(), v.Info.String()); err != nil {
					return err
				}
				if s := v.Server; s != nil {
					if _, err := fmt.Fprintf(cmd.OutOrStdout(), "server %s\n  drover:      %s\n  kubernetes:  %s\n", s.Host, s.Drover, s.Kubernetes); err != nil {
						return err
					}
				}
			default:
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				if output == "yaml" {
					if b, err = yaml.JSONToYAML(b); err != nil {
						return err
					}
					if _, err = cmd.OutOrStdout().Write(b); err != nil {
						return err
					}
				} else if _, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b); err != nil {
					return err
				}
			}
			return serverErr
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json|yaml")
	cmd.Flags().BoolVar(&clientOnly, "client", false, "this binary's version only: do not contact the management cluster")
	return cmd
}

// versionOutput is drover version's: this binary's, and the management cluster's when known.
type versionOutput struct {
	version.Info
	Server *serverInfo `json:"server,omitempty"`
}

type serverInfo struct {
	Host string `json:"host"`
	// Drover is the version of the drover that last applied the CRDs, "unknown" when they
	// carry none (applied by an older drover, or by hand) or may not be read.
	Drover     string `json:"drover"`
	Kubernetes string `json:"kubernetes"`
}

// serverVersion asks the management cluster (found as every command finds it) for its
// versions; nil without a kubeconfig.
func serverVersion(ctx context.Context, k *kubeOptions) (*serverInfo, error) {
	t, err := k.resolve()
	if errors.Is(err, errNoKubeconfig) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(t.Config)
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	kv, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("the management cluster at %s does not answer (%w): drover version --client prints this binary's version alone", cfg.Host, err)
	}
	s := &serverInfo{Host: cfg.Host, Drover: "unknown", Kubernetes: kv.GitVersion}
	c, err := client.New(cfg, client.Options{Scheme: server.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters.fleet.drover.io"}, crd); err == nil && crd.Annotations[crds.VersionAnnotation] != "" {
		s.Drover = crd.Annotations[crds.VersionAnnotation]
	}
	return s, nil
}

// buildInfo is version.Get(), with the Kubernetes version of the embedded control plane when
// the binary carries no module information (test binaries, -buildinfo stripped).
func buildInfo() version.Info {
	info := version.Get()
	if info.KubernetesVersion == version.Unknown {
		info.KubernetesVersion = controlplane.KubernetesVersion
	}
	return info
}
