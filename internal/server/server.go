// Package server runs drover's controller manager, against a given cluster or against an
// embedded local control plane that it starts itself.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/crds"
)

// SystemNamespace holds drover's own objects (leader-election lease, settings).
const SystemNamespace = "drover-system"

// The server's own calls: drover's CRDs and admission policy (unless --install-crds=false), its
// namespace, the leader-election Lease (with its Events) and the registration endpoint it
// publishes.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;create;patch,resourceNames=drover-agent-cluster-status;drover-import-identity-registrations;drover-agent-token-lifetime
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;create;patch,resourceNames=bundlecontents.fleet.drover.io;bundledeployments.fleet.drover.io;bundles.fleet.drover.io;clusterregistrations.fleet.drover.io;clusterregistrationtokens.fleet.drover.io;clusters.fleet.drover.io;gitrepos.fleet.drover.io;clusters.management.drover.io;cloudprovidermigrations.migration.drover.io
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=drover-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=configmaps,verbs=get;create;patch

// The client rate of drover's controllers against the management API server when the cluster's
// configuration sets none (in-cluster, or a kubeconfig). client-go's default, 5 requests per
// second in bursts of 10, would hold a commit changing one Bundle on 1,000 clusters (one write
// per cluster) for over three minutes; the API server's priority and fairness protects it from
// a client this fast.
const (
	ManagementQPS   = 1000
	ManagementBurst = 2000
)

// WithManagementRate gives cfg the rate ManagementQPS, ManagementBurst unless it has one.
func WithManagementRate(cfg *rest.Config) {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = ManagementQPS, ManagementBurst
	}
}

// Options configures the server.
type Options struct {
	// Kubeconfig selects the cluster to run against. Empty: in-cluster config, or with none, the
	// embedded control plane.
	Kubeconfig string
	// RESTConfig, when set, is the cluster to run against, before Kubeconfig (tests run the
	// server under a given identity this way).
	RESTConfig *rest.Config
	// Embedded starts the embedded control plane even in a pod (drover server --embedded).
	Embedded bool
	// DataDir holds the embedded control plane's state.
	DataDir string
	// BinDir holds the Kubernetes binaries for the embedded control plane.
	BinDir string
	// APIServerPort is the embedded API server's port (0 picks a free one).
	APIServerPort int
	// AdvertiseAddress is an IP address of this machine where the embedded API server also
	// listens and which agents are given, so that clusters elsewhere can register ("": 127.0.0.1
	// only).
	AdvertiseAddress string
	// MetricsAddr serves /metrics ("0" disables it).
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz.
	HealthAddr string
	// LeaderElect makes only one replica reconcile at a time.
	LeaderElect bool
	// Controllers are added to the manager before it starts.
	Controllers []func(ctrl.Manager) error
	// SkipCRDInstall leaves drover's CRDs to someone else (Helm with installCRDs, GitOps): the
	// server then never applies them (--install-crds=false).
	SkipCRDInstall bool
	// APIServerURL and APIServerCA (PEM) are the management API endpoint agents are given. When
	// set, the server writes them into the registration ConfigMap at start; the embedded control
	// plane publishes its own URL and CA unless they are set.
	APIServerURL string
	APIServerCA  []byte
	// UnsafeNoFsync makes the embedded control plane's etcd skip fsync: faster, for state that
	// is thrown away (drover server --demo deletes its data dir on exit).
	UnsafeNoFsync bool
}

// LeaderElectionID names the Lease in SystemNamespace that the leading replica holds (drover
// check reads it to tell whether a server runs).
const LeaderElectionID = "drover-controller-manager"

// Scheme returns the scheme with every type drover's controllers use.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, managementv1alpha1.AddToScheme,
		fleetv1alpha1.AddToScheme,
		migrationv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // programming error: conflicting type registrations
		}
	}
	return s
}

// Run starts drover and blocks until ctx is cancelled or a fatal error happens. Everything it
// started is stopped before it returns. Progress for the user goes to out.
func Run(ctx context.Context, opts Options, out io.Writer) error {
	for _, a := range []struct{ flag, addr string }{{"--metrics-bind-address", opts.MetricsAddr}, {"--health-probe-bind-address", opts.HealthAddr}} {
		if err := checkListen(a.flag, a.addr); err != nil {
			return err
		}
	}
	var (
		cfg *rest.Config
		cp  *controlplane.ControlPlane
		err error
	)
	switch {
	case opts.RESTConfig != nil:
		cfg = rest.CopyConfig(opts.RESTConfig)
	case opts.Kubeconfig != "":
		cfg, err = loadKubeconfig(ctx, opts.Kubeconfig)
	default:
		if !opts.Embedded {
			if cfg, err = rest.InClusterConfig(); err == nil {
				break
			}
		}
		start := time.Now()
		fmt.Fprintf(out, "Starting the embedded control plane in %s\n", opts.DataDir)
		cp, err = controlplane.Start(ctx, controlplane.Options{
			BinDir: opts.BinDir, DataDir: opts.DataDir, APIServerPort: opts.APIServerPort, ControllerManager: true,
			UnsafeNoFsync: opts.UnsafeNoFsync, AdvertiseAddress: opts.AdvertiseAddress,
		})
		if err == nil {
			defer func() {
				fmt.Fprintln(out, "Stopping the embedded control plane")
				cp.Stop()
			}()
			cfg = cp.RESTConfig()
			fmt.Fprintf(out, "Embedded control plane ready in %s\n", time.Since(start).Round(10*time.Millisecond))
			if renewed := cp.RenewedCertificates(); len(renewed) > 0 {
				fmt.Fprintf(out, "Renewed certificates close to expiry: %v (kubeconfig %s rewritten)\n", renewed, cp.KubeconfigPath())
			}
		}
	}
	if err != nil {
		return err
	}
	WithManagementRate(cfg)

	scheme := Scheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create discovery client: %w", err)
	}
	if err := crds.Ensure(ctx, c, dc, !opts.SkipCRDInstall); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c, SystemNamespace); err != nil {
		return err
	}
	endpoint := RegistrationEndpoint{URL: opts.APIServerURL, CA: opts.APIServerCA}
	if cp != nil && endpoint.URL == "" {
		if endpoint, err = embeddedEndpoint(cp); err != nil {
			return err
		}
	}
	if err := PublishRegistrationEndpoint(ctx, c, endpoint); err != nil {
		return err
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:        opts.HealthAddr,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       SystemNamespace,
		LeaderElectionReleaseOnCancel: true,
		// No managedFields, shared strings, ConfigMaps of SystemNamespace only: see CacheOptions.
		Cache: CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("create controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}
	for _, add := range opts.Controllers {
		if err := add(mgr); err != nil {
			return fmt.Errorf("set up controllers: %w", err)
		}
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgrErr := make(chan error, 1)
	go func() { mgrErr <- mgr.Start(runCtx) }()

	if cp != nil {
		self := os.Args[0] // the drover the user ran, as they typed it (bin/drover under make run)
		fmt.Fprintf(out, "drover is running. Use the embedded cluster with:\n  export KUBECONFIG=%s\n"+
			"  %s check            # is everything working?\n  %s cluster list -A  # hosted clusters (EKS, AKS, GKE)\n  %s fleet list -A    # registered clusters\n",
			cp.KubeconfigPath(), self, self, self)
	} else {
		fmt.Fprintf(out, "drover is running against %s\n", cfg.Host)
	}
	var exited <-chan error
	if cp != nil {
		exited = cp.Exited()
	}
	select {
	case err := <-mgrErr:
		if err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
		return nil
	case err := <-exited:
		cancel()
		if merr := <-mgrErr; merr != nil {
			return fmt.Errorf("embedded control plane failed: %w (controller manager: %w)", err, merr)
		}
		return fmt.Errorf("embedded control plane failed: %w", err)
	case <-ctx.Done():
		fmt.Fprintln(out, "Shutting down")
		return <-mgrErr
	}
}

// loadKubeconfig reads a kubeconfig and checks that its cluster answers, so a wrong file fails at
// start with a clear message instead of as retries later.
func loadKubeconfig(ctx context.Context, path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: file not found: pass the path of a kubeconfig file", path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s is not a valid kubeconfig: %w", path, err)
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { _, err := dc.ServerVersion(); done <- err }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster of --kubeconfig %s at %s (%w): check that it is running and the file is current", path, cfg.Host, err)
	}
	return cfg, nil
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

func checkListen(flag, addr string) error {
	if addr == "" || addr == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s %s: cannot listen (%w): pass a free address, or 0 to disable", flag, addr, errors.Unwrap(err))
	}
	return l.Close()
}

// DefaultBinDir is where the Kubernetes binaries are looked for: $DROVER_KUBE_BIN_DIR, else
// k8s/ next to the drover executable (bin/k8s for bin/drover), else ./bin/k8s.
func DefaultBinDir() string {
	if d := os.Getenv("DROVER_KUBE_BIN_DIR"); d != "" {
		return d
	}
	if exe, err := os.Executable(); err == nil {
		d := filepath.Join(filepath.Dir(exe), "k8s")
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return filepath.Join("bin", "k8s")
}
