// Package cli is drover's command line: a thin cobra layer over the packages that do the work.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/logging"
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
	root.AddCommand(newServerCommand(k, logs), newVersionCommand(), newClusterCommand(k), newCloudsimCommand())
	root.AddCommand(newAgentCommand(k, logs), newMigrateCommand(k))
	root.AddCommand(newBundleCommand(k), newFleetCommand(k), newTokenCommand(k))
	root.AddCommand(newGitRepoCommand(k))
	root.AddCommand(newDashboardCommand(k), newCheckCommand(k))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
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

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print drover's version, git commit, Go version and the Kubernetes version it was built against",
		Example: "  drover version\n  drover version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildInfo()
			switch output {
			case "":
				_, err := fmt.Fprint(cmd.OutOrStdout(), info.String())
				return err
			case "json", "yaml":
				b, err := info.JSON()
				if err != nil {
					return err
				}
				if output == "yaml" {
					if b, err = yaml.JSONToYAML(b); err != nil {
						return err
					}
					_, err = cmd.OutOrStdout().Write(b)
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
				return err
			}
			return usageErrorf("-o %s: unknown output format (use json or yaml, or leave it out)", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json|yaml")
	return cmd
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
