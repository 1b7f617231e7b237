// Package integration tests Bundles end to end: a management API server running drover's
// registration and bundle controllers, a full downstream cluster (kube-controller-manager,
// scheduler, kwok: Deployments get pods) and a plain downstream API server. Both downstream
// clusters are imported (manager-initiated) and run a real agent as a goroutine with the
// downstream admin config standing in for in-cluster config.
package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

// The fleet: workspace ws holds two imported Clusters, "full" and "plain".
const (
	ws         = "drover-default"
	agentNS    = "drover-agent"
	fullName   = "full"
	plainName  = "plain"
	driftEvery = time.Second
)

var mgmt, full, plain *envtest.Cluster

// importedAgentPodUID is the full cluster's agent pod as the importer started it, recorded
// before the agent ran and could apply its own Bundle.
var importedAgentPodUID string

// runningAgentPod returns the UID of the single running agent pod of the full cluster.
func runningAgentPod(ctx context.Context) (string, error) {
	var pods corev1.PodList
	if err := full.Client.List(ctx, &pods, client.InNamespace(agentNS), client.MatchingLabels{"app.kubernetes.io/name": "drover-agent"}); err != nil {
		return "", err
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	if len(live) != 1 || live[0].Status.Phase != corev1.PodRunning {
		return "", fmt.Errorf("want one running agent pod, have %d", len(live))
	}
	return string(live[0].UID), nil
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	if os.Getenv("DROVER_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	type result struct {
		c   *envtest.Cluster
		err error
	}
	fullCh, plainCh := make(chan result, 1), make(chan result, 1)
	go func() { c, err := envtest.StartFull("full", envtest.Options{}); fullCh <- result{c, err} }()
	go func() { c, err := envtest.Start("plain", envtest.Options{}); plainCh <- result{c, err} }()
	var err error
	mgmt, err = startManagement()
	f, p := <-fullCh, <-plainCh
	full, plain = f.c, p.c
	defer func() { _ = mgmt.Stop(); _ = full.Stop(); _ = plain.Stop() }()
	if err = errors.Join(err, f.err, p.err); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func startManagement() (*envtest.Cluster, error) {
	c, err := envtest.Start("management", envtest.Options{})
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "config", "crd", "bases", "fleet.drover.io_*.yaml"))
	if err == nil {
		_, err = crenvtest.InstallCRDs(c.Config, crenvtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true})
	}
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("install fleet CRDs: %w", err)
	}
	return c, nil
}

// setup starts the controllers, imports both downstream clusters and starts their agents.
func setup(ctx context.Context) error {
	if err := mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultNamespace}}); err != nil {
		return err
	}
	if err := mgmt.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.DefaultNamespace, Name: config.DefaultName},
		Data: map[string]string{config.KeyAPIServerURL: mgmt.Config.Host, config.KeyAPIServerCA: string(mgmt.Config.CAData)}}); err != nil {
		return err
	}
	if err := full.Client.Create(ctx, envtest.FakeNode("node-1", nil)); err != nil {
		return err
	}
	cfg := rest.CopyConfig(mgmt.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: server.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := registration.Setup(ctx, mgr, mgr.GetClient(), registration.Options{}); err != nil {
		return err
	}
	if err := bundle.Setup(mgr, bundle.Options{ManageAgents: true, NotReadyGrace: 3 * time.Second}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "controllers stopped:", err)
		}
	}()
	for _, d := range []*envtest.Cluster{full, plain} {
		kc, err := local.Kubeconfig(d.Config)
		if err != nil {
			return err
		}
		if err := mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "kc-" + d.Name},
			Data: map[string][]byte{fleetv1alpha1.KeyKubeconfig: kc}}); err != nil {
			return err
		}
		if err := mgmt.Client.Create(ctx, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: d.Name},
			Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc-" + d.Name}}); err != nil {
			return err
		}
	}
	// The importer deploys each agent; the agents then run here, as goroutines.
	deadline := time.Now().Add(60 * time.Second)
	for _, d := range []*envtest.Cluster{full, plain} {
		for {
			c := &fleetv1alpha1.Cluster{}
			if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: d.Name}, c); err != nil {
				return err
			}
			if meta.IsStatusConditionTrue(c.Status.Conditions, fleetv1alpha1.ConditionImported) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster %s not imported: %+v", d.Name, c.Status.Conditions)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if d == full {
			// The pod the importer's Deployment runs, before any agent could adopt its Bundle.
			for {
				uid, err := runningAgentPod(ctx)
				if err == nil {
					importedAgentPodUID = uid
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("imported agent pod: %w", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		go func() {
			_ = agent.Run(ctx, agent.Options{Config: d.Config, Namespace: agentNS, HeartbeatInterval: time.Second,
				RetryMin: time.Second, RetryMax: 4 * time.Second, Identity: "test", DriftInterval: driftEvery})
		}()
	}
	for _, name := range []string{fullName, plainName} {
		for {
			c := &fleetv1alpha1.Cluster{}
			if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, c); err != nil {
				return err
			}
			if c.Status.Agent.LastSeen != nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("agent of %s never checked in", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// eventually polls cond until it returns nil or the deadline passes.
var eventually = envtest.Eventually

func getCluster(t testing.TB, name string) *fleetv1alpha1.Cluster {
	t.Helper()
	c := &fleetv1alpha1.Cluster{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// patchCluster applies mutate to the Cluster name, retrying on conflicts.
func patchCluster(t testing.TB, name string, mutate func(*fleetv1alpha1.Cluster)) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		c := getCluster(t, name)
		mutate(c)
		return mgmt.Client.Update(t.Context(), c)
	})
}

// patchBundle applies mutate to Bundle b as stored, retrying on conflicts, and leaves the
// result in b.
func patchBundle(t testing.TB, b *fleetv1alpha1.Bundle, mutate func(*fleetv1alpha1.Bundle)) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		mutate(b)
		return mgmt.Client.Update(t.Context(), b)
	})
}

func bundleDeployment(t testing.TB, cluster, name string) (*fleetv1alpha1.BundleDeployment, error) {
	t.Helper()
	c := getCluster(t, cluster)
	bd := &fleetv1alpha1.BundleDeployment{}
	err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: c.Status.Namespace, Name: name}, bd)
	return bd, err
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func raw(t testing.TB, objs ...runtime.Object) []runtime.RawExtension {
	t.Helper()
	var out []runtime.RawExtension
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, runtime.RawExtension{Raw: b})
	}
	return out
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// fakeAgent creates Cluster name in the workspace without an agent and returns what its agent
// would do: check in as an agent of version v0.1.0, older than every agent feature, reporting
// extra status.agent fields (NOW in them is the check-in's time).
func fakeAgent(t *testing.T, name string) (beat func(extra string)) {
	t.Helper()
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}
	if err := mgmt.Client.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), c) })
	eventually(t, 30*time.Second, func() error {
		if getCluster(t, name).Status.Namespace == "" {
			return errors.New("no cluster namespace yet")
		}
		return nil
	})
	var lastSeen time.Time
	return func(extra string) {
		t.Helper()
		// Each beat a second later than the last, as an agent's are.
		if now := time.Now().UTC().Truncate(time.Second); now.After(lastSeen) {
			lastSeen = now
		} else {
			lastSeen = lastSeen.Add(time.Second)
		}
		now := lastSeen.Format(time.RFC3339)
		patch := fmt.Sprintf(`{"status":{"agent":{"lastSeen":%q,"version":"v0.1.0"%s}}}`, now, strings.ReplaceAll(extra, "NOW", now))
		if err := mgmt.Client.Status().Patch(t.Context(), c, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
}
