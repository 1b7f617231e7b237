package cli

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/droverhq/drover/internal/dashboard"
)

// uiOptions are drover server's dashboard flags.
type uiOptions struct {
	address, certFile, keyFile string
	// local, when set, serves the dashboard in local mode (the demo's): as the manager's own
	// identity, behind an access key, on a listener bound already.
	local *localDashboard
}

// localDashboard is a dashboard served as the manager's identity to whoever has its URL.
type localDashboard struct {
	listener   net.Listener
	key        string
	namespaces []string
	// who says whose identity it is, for the printed line.
	who string
}

// url is the address that signs a browser in (the access key is traded for a cookie).
func (l *localDashboard) url(scheme string) string {
	return fmt.Sprintf("%s://%s/login?key=%s", scheme, l.listener.Addr(), l.key)
}

// newAccessKey is a random access key for a local-mode dashboard's URL.
func newAccessKey() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("access key: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (o *uiOptions) scheme() string {
	if o.certFile != "" {
		return "https"
	}
	return "http"
}

func (o *uiOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.address, "ui-address", "", "address of the web dashboard, e.g. 127.0.0.1:8082 (default: off); viewers sign in with their own bearer token, every read and action is theirs (docs/dashboard.md). With --demo: default 127.0.0.1 on a free port, served as the demo's admin to whoever opens the printed URL (it carries an access key); 0 turns it off")
	f.StringVar(&o.certFile, "ui-tls-cert-file", "", "PEM certificate to serve the dashboard over HTTPS (with --ui-tls-key-file)")
	f.StringVar(&o.keyFile, "ui-tls-key-file", "", "PEM private key of --ui-tls-cert-file")
}

// controllers add the dashboard to the manager (every replica serves it), or nothing when
// --ui-address is off. It talks to the manager's API server with the viewers' tokens: only the
// server's address and CA are taken from the manager's config.
func (o *uiOptions) controllers(out io.Writer) ([]func(ctrl.Manager) error, error) {
	if (o.certFile == "") != (o.keyFile == "") {
		return nil, usageErrorf("--ui-tls-cert-file and --ui-tls-key-file go together")
	}
	if l := o.local; l != nil {
		return []func(ctrl.Manager) error{func(mgr ctrl.Manager) error {
			h, err := dashboard.New(dashboard.Options{Local: mgr.GetConfig(), AccessKey: l.key, Namespaces: l.namespaces})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Dashboard: %s (%s; the key in the URL signs you in)\n", l.url(o.scheme()), l.who)
			return mgr.Add(&dashboard.Server{Handler: h, Listener: l.listener, CertFile: o.certFile, KeyFile: o.keyFile})
		}}, nil
	}
	if o.address == "" || o.address == "0" {
		if o.certFile != "" {
			return nil, usageErrorf("--ui-tls-cert-file needs --ui-address")
		}
		return nil, nil
	}
	return []func(ctrl.Manager) error{func(mgr ctrl.Manager) error {
		h, err := dashboard.New(dashboard.Options{APIServer: mgr.GetConfig()})
		if err != nil {
			return err
		}
		l, err := dashboard.Listen("--ui-address", o.address)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Dashboard: %s://%s/ (sign in with a bearer token of the management cluster)\n", o.scheme(), l.Addr())
		return mgr.Add(&dashboard.Server{Handler: h, Listener: l, CertFile: o.certFile, KeyFile: o.keyFile})
	}}, nil
}

func newDashboardCommand(k *kubeOptions) *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the web dashboard on 127.0.0.1 as your kubeconfig identity and print its URL",
		Long: `Serve drover's web dashboard on 127.0.0.1 for yourself: every read and action is made
with your kubeconfig's identity (--kubeconfig, --context, --user like kubectl), so you see
exactly what RBAC lets you see. The URL printed carries a random access key; the dashboard
refuses browsers without it. Ctrl-C stops it.`,
		Example: `  drover dashboard
  drover dashboard --port 8082 --context prod-mgmt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port < 0 || port > 65535 {
				return usageErrorf("--port %d: use 0 (a free port) or 1-65535", port)
			}
			t, err := k.resolve()
			if err != nil {
				return err
			}
			key, err := newAccessKey()
			if err != nil {
				return err
			}
			var namespaces []string
			if t.Namespace != "" {
				namespaces = []string{t.Namespace}
			}
			h, err := dashboard.New(dashboard.Options{Local: t.Config, AccessKey: key, Namespaces: namespaces})
			if err != nil {
				return err
			}
			l, err := dashboard.Listen("--port", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "drover dashboard of %s, as the identity of %s:\n  http://%s/login?key=%s\nCtrl-C stops it.\n",
				t.Config.Host, t.Source, l.Addr(), key)
			return (&dashboard.Server{Handler: h, Listener: l}).Start(cmd.Context())
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "port on 127.0.0.1 (0: a free one)")
	return cmd
}
