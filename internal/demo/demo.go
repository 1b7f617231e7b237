// Package demo runs the world of `drover server --demo` next to drover's own controllers: the
// EKS, AKS and GKE simulators in-process with demo credentials, hosted clusters in several
// states (one with a console change adopted, one with a conflict; the first, backed by a real
// kube-apiserver that authenticates EKS tokens through the simulator, joins the fleet by
// itself and gets a Bundle targeted at every EKS cluster), two downstream clusters (real
// kube-apiservers whose nodes and pods kwok simulates) imported into the fleet with their
// agents running in this process, a sample Bundle deployed to both, a GitRepo of a repository
// git serves on loopback deployed to all three fleet clusters (when git is installed), and a
// cloud-provider
// migration of each: the downstream clusters play RKE2 clusters on AWS, simulated by
// pkg/distsim, which drover's migration controller migrates to the AWS CCM (one succeeds, one
// fails a verification).
//
// Everything lives under the data dir, which drover server --demo deletes on exit.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/gke"
)

// Namespace holds every object of the demo in the management cluster.
const Namespace = "demo"

// marker is the file that makes a data dir a demo's, which drover server --demo may delete.
const marker = ".drover-demo"

// Options configure the demo.
type Options struct {
	// DataDir holds everything the demo and the embedded control plane write; it is deleted by
	// Stop. It must not exist, be empty, or be a previous demo's.
	DataDir string
	// BinDir holds the Kubernetes binaries (kube-apiserver, etcd, kwok, ...).
	BinDir string
	// Out receives what the demo started and how to look at it.
	Out io.Writer
	// Drover and Kubectl are the commands the "how to look" lines use (default "drover" and
	// "kubectl"): the ones the user started drover with, so the lines work as printed.
	Drover, Kubectl string
	// Links are "how to look" lines printed with the summary, for what drover server serves
	// besides the API (the metrics endpoint, a web dashboard): "metrics: http://...".
	Links []string
	// SimDelay is how long the simulators take to create or update a cluster (default 2s).
	SimDelay time.Duration
	// AgentHeartbeat is the in-process agents' heartbeat interval (default 10s).
	AgentHeartbeat time.Duration
}

// Demo is a running demo world.
type Demo struct {
	o     Options
	start time.Time

	sims        *sims
	git         *gitServer            // nil without git
	downstreams chan downstreamResult // one per downstream cluster, as each starts
	starting    int                   // downstream clusters started (results sent or to come)
	clusters    []*downstream         // downstream clusters received from downstreams (for Stop)
	// backingUp is closed once the API server behind HostedJoined started (joined) or failed
	// to (joinedErr).
	backingUp chan struct{}
	joined    *downstream
	joinedErr error

	// startCtx ends with Stop: it aborts the downstream clusters still starting.
	startCtx context.Context
	endStart context.CancelFunc
	mu       sync.Mutex
	cancel   context.CancelFunc
	agents   sync.WaitGroup // the agents, the RKE2 simulators and the migration report
	stopped  bool
}

// PrepareDataDir checks that dir may hold a demo (absent, empty, or a previous demo's) and
// marks it as one.
func PrepareDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("--data-dir %s: %w", dir, err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("--data-dir %s is not empty and not a demo's: --demo deletes its data dir on exit, so give it a new or empty one", dir)
		}
		// A demo that did not get to clean up (killed): start afresh.
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove the previous demo in %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, marker), []byte("drover server --demo deletes this directory on exit\n"), 0o600)
}

// Start starts the simulators and, in the background, the downstream clusters, so they come up
// while drover's own control plane starts. Call Stop when done, even after an error.
func Start(o Options) (*Demo, error) {
	if o.SimDelay == 0 {
		o.SimDelay = 2 * time.Second
	}
	if o.AgentHeartbeat == 0 {
		o.AgentHeartbeat = 10 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	d := &Demo{o: o, start: time.Now(), downstreams: make(chan downstreamResult, len(downstreamNames))}
	d.startCtx, d.endStart = context.WithCancel(context.Background())
	if err := PrepareDataDir(o.DataDir); err != nil {
		return d, err
	}
	var err error
	if d.sims, err = startSims(o.SimDelay); err != nil {
		return d, err
	}
	if d.git, err = startGit(filepath.Join(o.DataDir, "demo", "git")); err != nil {
		if !errors.Is(err, errNoGit) {
			return d, fmt.Errorf("start the demo's Git server: %w", err)
		}
		fmt.Fprintln(o.Out, "Demo: git is not installed, so no GitRepo (install git to see drover deploy from a Git repository)")
	}
	d.backingUp = make(chan struct{})
	go func() {
		ds, err := startBacking(d.startCtx, o.BinDir, filepath.Join(o.DataDir, "demo", HostedJoined), d.sims.eksURL)
		d.mu.Lock()
		d.joined, d.joinedErr = ds, err
		d.mu.Unlock()
		close(d.backingUp)
	}()
	d.starting = len(downstreamNames)
	for _, name := range downstreamNames {
		go func() {
			ds, err := startDownstream(d.startCtx, o.BinDir, filepath.Join(o.DataDir, "demo", name), name)
			d.downstreams <- downstreamResult{ds, err}
		}()
	}
	return d, nil
}

// Setup adds the demo to drover's controller manager: once the manager runs, the demo creates
// its objects in the management cluster, imports the downstream clusters, starts their agents
// and prints a summary when everything is ready. A failure stops drover server.
func (d *Demo) Setup(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		d.mu.Lock()
		if d.stopped {
			d.mu.Unlock()
			cancel()
			return nil
		}
		d.cancel = cancel
		d.mu.Unlock()
		fmt.Fprintf(d.o.Out, "Demo: cloud simulators in this process: EKS %s, AKS %s, GKE %s\n", d.sims.eksURL, d.sims.aks.URL(), d.sims.gkeURL)
		fmt.Fprintf(d.o.Out, "Demo: downstream clusters %s (kube-apiserver, controller-manager, scheduler, kwok) in %s\n",
			strings.Join(downstreamNames, ", "), filepath.Join(d.o.DataDir, "demo"))
		if err := d.run(ctx, mgr.GetConfig()); err != nil && ctx.Err() == nil {
			return fmt.Errorf("demo: %w", err)
		}
		return nil
	}))
}

// Stop stops the agents, the downstream clusters and the simulators, and deletes the data dir.
// Call it after drover server has stopped its own control plane.
func (d *Demo) Stop() {
	d.mu.Lock()
	d.stopped = true
	if d.endStart != nil {
		d.endStart()
	}
	if d.cancel != nil {
		d.cancel()
	}
	d.mu.Unlock()
	d.agents.Wait()
	// Collect the downstream clusters still starting: Start sends one result for each.
	d.mu.Lock()
	for len(d.clusters) < d.starting {
		r := <-d.downstreams
		d.clusters = append(d.clusters, r.ds)
	}
	d.mu.Unlock()
	if d.backingUp != nil {
		<-d.backingUp // startCtx has ended: a start in progress gives up
	}
	d.mu.Lock()
	all := append([]*downstream{d.joined}, d.clusters...)
	d.mu.Unlock()
	for _, ds := range all {
		if ds != nil {
			ds.cp.Stop()
		}
	}
	if d.sims != nil {
		d.sims.close()
	}
	if d.git != nil {
		d.git.close()
	}
	if _, err := os.Stat(filepath.Join(d.o.DataDir, marker)); err == nil {
		if err := os.RemoveAll(d.o.DataDir); err != nil {
			fmt.Fprintf(d.o.Out, "Demo: could not delete %s: %v\n", d.o.DataDir, err)
			return
		}
		fmt.Fprintf(d.o.Out, "Demo: deleted %s\n", d.o.DataDir)
	}
}

// sims are the three cloud simulators, served on loopback.
type sims struct {
	eks            *eks.Server
	eksURL, gkeURL string
	aks            *aks.Server
	gke            *gke.Server
	gkeKey         []byte
	servers        []*http.Server
}

// Demo credentials the simulators accept (well-known, loopback only).
const (
	azureTenant       = "00000000-0000-0000-0000-0000000de770"
	azureClient       = "11111111-1111-1111-1111-1111111de770"
	azureSecret       = "drover-demo-aks-client-secret" //nolint:gosec // the demo simulator's well-known secret
	azureSubscription = "22222222-2222-2222-2222-2222222de770"
	gcpProject        = "drover-demo"
	gcpAccount        = "drover@drover-demo.iam.gserviceaccount.com"
)

func startSims(delay time.Duration) (s *sims, err error) {
	s = &sims{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	serve := func(h http.Handler) (string, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("listen for a simulator: %w", err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go func() { _ = srv.Serve(l) }()
		return "http://" + l.Addr().String(), nil
	}
	s.eks = eks.New(eks.Options{Delay: delay})
	if s.eksURL, err = serve(s.eks); err != nil {
		return s, err
	}
	if s.aks, err = aks.New(aks.Options{Delay: delay, Credentials: []aks.Credential{{
		TenantID: azureTenant, ClientID: azureClient, ClientSecret: azureSecret, Subscriptions: []string{azureSubscription},
	}}}); err != nil {
		return s, fmt.Errorf("start the AKS simulator: %w", err)
	}
	if err := s.aks.Start("127.0.0.1:0"); err != nil {
		s.aks = nil
		return s, fmt.Errorf("start the AKS simulator: %w", err)
	}
	s.gke = gke.New(gke.Options{Delay: delay})
	if s.gkeURL, err = serve(s.gke); err != nil {
		return s, err
	}
	s.gke.SetBaseURL(s.gkeURL)
	if s.gkeKey, err = s.gke.NewServiceAccountKey(gcpAccount, gcpProject); err != nil {
		return s, fmt.Errorf("create the GKE service-account key: %w", err)
	}
	return s, nil
}

func (s *sims) close() {
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	if s.aks != nil {
		_ = s.aks.Close()
	}
}

// downstreamNames are the fleet clusters the demo imports.
var downstreamNames = []string{"edge-1", "edge-2"}

// downstream is a local cluster standing in for a downstream cluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, which makes its fake nodes Ready and
// "runs" the pods scheduled to them.
type downstream struct {
	name       string
	cp         *controlplane.ControlPlane
	config     *rest.Config
	kubeconfig []byte
}

type downstreamResult struct {
	ds  *downstream
	err error
}

func startDownstream(ctx context.Context, binDir, dir, name string) (*downstream, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{
		BinDir: binDir, DataDir: dir, ControllerManager: true, Scheduler: true, Kwok: true, UnsafeNoFsync: true,
	})
	if err != nil {
		return nil, fmt.Errorf("start downstream cluster %s: %w", name, err)
	}
	kc, err := os.ReadFile(cp.KubeconfigPath())
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("read the kubeconfig of downstream cluster %s: %w", name, err)
	}
	return &downstream{name: name, cp: cp, config: cp.RESTConfig(), kubeconfig: kc}, nil
}
