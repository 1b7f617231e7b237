// Package cli is drover's command line: a thin cobra layer over the packages that do the work.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/droverhq/drover/internal/cli.Version=...".
var Version = "dev"

// NewRootCommand returns the drover command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "drover",
		Short:         "drover: a Kubernetes-native control plane for fleets of clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServerCommand(), newVersionCommand(), newClusterCommand(), newCloudsimCommand())
	root.AddCommand(newAgentCommand(), newMigrateCommand())
	root.AddCommand(newBundleCommand())
	return root
}

// Main runs the command line with args and returns the exit code. SIGINT/SIGTERM cancel the
// command's context, so long-running commands stop cleanly.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print drover's version",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "drover %s\n", Version)
		},
	}
}
