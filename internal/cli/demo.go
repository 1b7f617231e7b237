package cli

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/dashboard"
	"github.com/droverhq/drover/internal/demo"
	"github.com/droverhq/drover/internal/server"
)

// demoServer prepares `drover server --demo`: the embedded control plane in a data dir of its
// own (default $TMPDIR/drover-demo, deleted on exit), demo-friendly intervals unless given, the
// web dashboard on 127.0.0.1 as the demo's admin behind the printed URL's access key (unless
// --ui-address says otherwise), and the demo world (internal/demo) started next to the control
// plane. links are extra "how to look" lines for the summary. The returned stop must be called
// after server.Run returned.
func demoServer(cmd *cobra.Command, opts *server.Options, hosted *hostedOptions, ui *uiOptions, links []string) (stop func(), err error) {
	f := cmd.Flags()
	if f.Changed("kubeconfig") || f.Changed("context") || f.Changed("embedded") && !opts.Embedded {
		return nil, usageErrorf("--demo runs on its own embedded control plane: drop --kubeconfig, --context and --embedded=false")
	}
	opts.Embedded = true
	opts.UnsafeNoFsync = true // the demo's state is deleted on exit
	if !f.Changed("data-dir") {
		opts.DataDir = filepath.Join(os.TempDir(), "drover-demo")
	}
	if !f.Changed("apiserver-port") {
		opts.APIServerPort = 0
	}
	// The simulators finish creates and updates in seconds: look again every second while
	// something is in progress, and refresh idle clusters every minute.
	if !f.Changed("hosted-poll-interval") {
		hosted.pollInterval = time.Second
	}
	for name, d := range hosted.refresh {
		if !f.Changed(name + "-refresh-interval") {
			*d = time.Minute
		}
	}
	var own []string
	if !f.Changed("ui-address") {
		ui.address = "127.0.0.1:0"
	}
	if ui.address != "" && ui.address != "0" {
		// The demo's admin is the only user: the dashboard is served as it, to whoever has the
		// URL (bound now, so the summary can name it).
		key, err := newAccessKey()
		if err != nil {
			return nil, err
		}
		l, err := dashboard.Listen("--ui-address", ui.address)
		if err != nil {
			return nil, err
		}
		ui.local = &localDashboard{listener: l, key: key, namespaces: []string{demo.Namespace}, who: "as the demo's admin"}
		own = append(own, "dashboard: "+ui.local.url(ui.scheme())+"   (open it in a browser)")
	} else {
		own = append(own, "drover dashboard   (the web dashboard on 127.0.0.1, as the KUBECONFIG above)")
	}
	if opts.MetricsAddr != "" && opts.MetricsAddr != "0" {
		own = append(own, "curl -s http://"+opts.MetricsAddr+"/metrics | grep ^drover_")
	}
	links = append(own, links...)
	d, err := demo.Start(demo.Options{DataDir: opts.DataDir, BinDir: opts.BinDir, Out: cmd.OutOrStdout(), Links: links,
		Drover: os.Args[0], Kubectl: filepath.Join(opts.BinDir, "kubectl")})
	if err != nil {
		d.Stop()
		if ui.local != nil {
			_ = ui.local.listener.Close()
		}
		return nil, err
	}
	opts.Controllers = append(opts.Controllers, d.Setup)
	return d.Stop, nil
}
