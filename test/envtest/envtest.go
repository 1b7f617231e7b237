// Package envtest starts real Kubernetes API servers for drover's integration and end-to-end
// tests, using the binaries built by `make tools` (never downloaded).
//
// Two kinds of cluster:
//   - Start: etcd + kube-apiserver through controller-runtime's envtest, with RBAC and the
//     TokenRequest API on. Cheap (about 5 s); start one per package in TestMain and give each
//     test its own namespace.
//   - StartFull: drover's own control plane with kube-controller-manager, kube-scheduler and kwok,
//     for tests that need namespace deletion, garbage collection, Deployments that get pods, or
//     fake nodes.
//
// Several of either kind can run at once in one test binary (a management and a downstream
// cluster, say); each has its own ports, certificates and data.
package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Options configures a test cluster.
type Options struct {
	// InstallCRDs installs drover's CRDs from config/crd/bases and its admission policies from
	// config/admission, as drover server does.
	InstallCRDs bool
	// Scheme for the returned client; default server.Scheme().
	Scheme *runtime.Scheme
	// APIServerFlags are extra kube-apiserver flags (name without "--" → value), e.g.
	// "authentication-token-webhook-config-file". Start only.
	APIServerFlags map[string]string
	// TokenWebhook, when set, makes the API server authenticate bearer tokens it does not know
	// through this TokenReview (authentication.k8s.io/v1) URL, as a cloud provider's API server
	// asks its identity service (pkg/cloudsim simulators serve one). Start only.
	TokenWebhook *TokenWebhook
}

// TokenWebhook is the API server's token authentication webhook.
type TokenWebhook struct {
	// URL of the TokenReview endpoint (plain HTTP is fine: it is a loopback test server).
	URL string
	// CacheTTL is how long the API server caches an answer; "" keeps its default (2m), "0s"
	// makes an expired token refused at once.
	CacheTTL string
}

// Cluster is a running test API server with an admin client.
type Cluster struct {
	// Config is an admin (system:masters) config.
	Config *rest.Config
	// Client is an admin controller-runtime client.
	Client client.Client
	// Clientset is an admin client-go clientset.
	Clientset kubernetes.Interface
	// Name tells clusters apart in messages.
	Name string

	env  *crenvtest.Environment
	full *controlplane.ControlPlane
	dir  string
}

// Start starts an API server (etcd + kube-apiserver, RBAC and TokenRequest on).
func Start(name string, opts Options) (*Cluster, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	env := &crenvtest.Environment{BinaryAssetsDirectory: binDir, ErrorIfCRDPathMissing: true}
	if opts.InstallCRDs {
		env.CRDDirectoryPaths = []string{filepath.Join(RepoRoot(), "config", "crd", "bases")}
	}
	api := env.ControlPlane.GetAPIServer()
	// Loopback-only hosts: the apiserver cannot pick an advertise address by itself, and 1.37
	// refuses a loopback one with the default endpoint reconciler.
	api.Configure().Set("advertise-address", "127.0.0.1").Set("endpoint-reconciler-type", "none")
	for k, v := range opts.APIServerFlags {
		api.Configure().Set(k, v)
	}
	var dir string
	if w := opts.TokenWebhook; w != nil {
		if dir, err = os.MkdirTemp("", "drover-"+name+"-webhook-"); err != nil {
			return nil, fmt.Errorf("create webhook config dir: %w", err)
		}
		file := filepath.Join(dir, "webhook.kubeconfig")
		if err := os.WriteFile(file, simcore.WebhookKubeconfig(w.URL, nil), 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("write webhook config: %w", err)
		}
		api.Configure().Set("authentication-token-webhook-config-file", file).Set("authentication-token-webhook-version", "v1")
		if w.CacheTTL != "" {
			api.Configure().Set("authentication-token-webhook-cache-ttl", w.CacheTTL)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start test API server %s: %w", name, err)
	}
	c, err := newCluster(name, cfg, opts)
	if err == nil && opts.InstallCRDs {
		err = c.InstallAdmissionPolicies(context.Background())
	}
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c.env, c.dir = env, dir
	return c, nil
}

// StartFull starts a full cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok. Nodes annotated kwok.x-k8s.io/node=fake (see FakeNode) become Ready and run pods.
func StartFull(name string, opts Options) (*Cluster, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "drover-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	cp, err := controlplane.Start(context.Background(), controlplane.Options{
		BinDir: binDir, DataDir: dir, ControllerManager: true, Scheduler: true, Kwok: true, UnsafeNoFsync: true,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start full test cluster %s: %w", name, err)
	}
	c, err := newCluster(name, cp.RESTConfig(), opts)
	if err == nil && opts.InstallCRDs {
		err = installCRDs(c)
	}
	if err == nil && opts.InstallCRDs {
		err = c.InstallAdmissionPolicies(context.Background())
	}
	if err != nil {
		cp.Stop()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c.full, c.dir = cp, dir
	return c, nil
}

func newCluster(name string, cfg *rest.Config, opts Options) (*Cluster, error) {
	scheme := opts.Scheme
	if scheme == nil {
		scheme = server.Scheme()
	}
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", name, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for %s: %w", name, err)
	}
	return &Cluster{Name: name, Config: cfg, Client: c, Clientset: cs}, nil
}

// Stop stops the cluster and removes its data.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	var err error
	if c.env != nil {
		err = c.env.Stop()
	}
	if c.full != nil {
		c.full.Stop()
	}
	if c.dir != "" {
		err = errors.Join(err, os.RemoveAll(c.dir))
	}
	return err
}

// ControlPlane returns the processes of a full cluster (nil for Start).
func (c *Cluster) ControlPlane() *controlplane.ControlPlane { return c.full }

// Namespace creates a fresh namespace for one test and deletes it when the test ends.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := c.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace in %s: %v", c.Name, err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// ServiceAccountConfig creates (if needed) the ServiceAccount ns/name and returns a config that
// authenticates as it with a short-lived token from the TokenRequest API. It carries no admin
// rights: tests use it to act as a real identity.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, ns, name string) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Client.Create(ctx, sa); client.IgnoreAlreadyExists(err) != nil {
		return nil, fmt.Errorf("create service account %s/%s: %w", ns, name, err)
	}
	return TokenConfig(ctx, c.Clientset, c.Config, ns, name, 10*time.Minute)
}

// FakeNode returns a Node that kwok (in a full cluster) makes Ready and runs pods on.
func FakeNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec: corev1.NodeSpec{},
	}
}

func installCRDs(c *Cluster) error {
	_, err := crenvtest.InstallCRDs(c.Config, crenvtest.CRDInstallOptions{
		Paths: []string{filepath.Join(RepoRoot(), "config", "crd", "bases")}, ErrorIfPathMissing: true,
	})
	if err != nil {
		return fmt.Errorf("install CRDs into %s: %w", c.Name, err)
	}
	return nil
}

// InstallAdmissionPolicies applies drover's admission policies (config/admission) as drover
// server does, once the CRDs they check are installed, and waits until they are type-checked.
func (c *Cluster) InstallAdmissionPolicies(ctx context.Context) error {
	if err := crds.InstallPolicies(ctx, c.Client); err != nil {
		return fmt.Errorf("install admission policies into %s: %w", c.Name, err)
	}
	return nil
}
