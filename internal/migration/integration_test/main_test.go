// Package integration_test runs cloud-provider migrations end to end against one full test
// cluster (kube-controller-manager, scheduler, kwok) with the distsim distribution simulator.
// Each test has its own namespace (standing in for kube-system) and its own node names.
package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	sigsyaml "sigs.k8s.io/yaml"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/checks"
	"github.com/droverhq/drover/internal/migration/rke1"
	"github.com/droverhq/drover/internal/migration/rke2"
	"github.com/droverhq/drover/pkg/distsim"
	"github.com/droverhq/drover/test/envtest"
)

var (
	full  *envtest.Cluster
	octet atomic.Int32
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	// Only the CRDs these tests use: the migration's own and a provisioning Cluster stand-in.
	full, err = envtest.StartFull("migration", envtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = full.Stop() }()
	ctrl.SetLogger(logr.Discard())
	if _, err := crenvtest.InstallCRDs(full.Config, crenvtest.CRDInstallOptions{Paths: []string{
		filepath.Join(envtest.RepoRoot(), "config", "crd", "bases", "migration.drover.io_cloudprovidermigrations.yaml"),
		filepath.Join(envtest.RepoRoot(), "pkg", "distsim", "provisioning-crd.yaml"),
	}, ErrorIfPathMissing: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// env is one simulated downstream cluster and a migration engine for it.
type env struct {
	ns      string
	sim     *distsim.Sim
	dist    migration.Distribution
	checker *checks.Checker
	file    string // rke1 cluster.yml
	key     types.NamespacedName
	stopSim func() // stops the simulator (idempotent)
}

type envOpts struct {
	rke2        bool
	misbehave   distsim.Misbehaviour
	noLeasePerm bool
	doc         func([]byte) []byte // edits the input document
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	ctx := t.Context()
	e := &env{ns: full.Namespace(t)}
	id := "kcm-" + e.ns
	if !o.noLeasePerm {
		grantLease(t, e.ns, id)
	}
	n := int(octet.Add(1))
	opts := distsim.Options{Client: full.Client, Name: e.ns, Octet: n, Namespace: e.ns, RKE2: o.rke2,
		ControlPlanes: 2, Workers: 1, Misbehave: o.misbehave}
	var doc []byte
	var err error
	if o.rke2 {
		doc, err = os.ReadFile("../rke2/testdata/cluster.yaml")
	} else {
		doc, err = os.ReadFile("../rke1/testdata/cluster.yml")
	}
	if err != nil {
		t.Fatal(err)
	}
	if o.doc != nil {
		doc = o.doc(doc)
	}
	if o.rke2 {
		e.key = types.NamespacedName{Namespace: e.ns, Name: "prod"}
		opts.Provisioning = e.key
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(e.ns)
		if err := full.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	e.sim = distsim.New(opts)
	info, _ := (rke2.Editor{}).Inspect(doc)
	if !o.rke2 {
		info, _ = (&rke1.Cluster{}).Inspect(doc)
	}
	if err := e.sim.Setup(ctx, info.Provider, false); err != nil {
		t.Fatal(err)
	}
	simCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.sim.Run(simCtx) }()
	e.stopSim = func() { cancel(); <-done }
	t.Cleanup(e.stopSim)

	if o.rke2 {
		e.dist = &rke2.Object{Client: full.Client, Key: e.key}
	} else {
		e.file = filepath.Join(t.TempDir(), "cluster.yml")
		if err := os.WriteFile(e.file, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		e.dist = rke1.New(e.file, "", e.sim.Runner)
	}
	e.checker = &checks.Checker{Client: full.Clientset, Namespace: e.ns, Selector: e.sim.Selector(), KCMIdentity: id}
	// kwok makes the nodes Ready shortly after they are created; the preflight requires it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		nodes, err := e.checker.Nodes(ctx)
		if err == nil && len(checks.Eligibility(nodes, nil)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes not Ready after 30s: %v %v", err, checks.Eligibility(nodes, nil))
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline, not synchronisation
	}
	return e
}

func grantLease(t testing.TB, ns, user string) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leader-migration"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{checks.MigrationLease}, Verbs: []string{"get", "create", "update"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leader-migration"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if err := full.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := full.Client.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
}

func (e *env) engine(store migration.Store, timeout time.Duration) *migration.Engine {
	return &migration.Engine{Dist: e.dist, Checks: e.checker, Store: store, StepTimeout: timeout, PollInterval: 50 * time.Millisecond}
}

func spec(lm bool, version string) migrationv1alpha1.CloudProviderMigrationSpec {
	return migrationv1alpha1.CloudProviderMigrationSpec{LeaderMigration: &lm, KubernetesVersion: version}
}

func golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := migration.Diff(want, got); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, d)
	}
}

// normalize drops the per-test namespace so live documents compare with golden files.
func (e *env) normalize(doc []byte) []byte {
	return []byte(strings.ReplaceAll(string(doc), e.ns, "NAMESPACE"))
}

var envtestFakeNode = envtest.FakeNode

// kubeconfig is an admin kubeconfig for the test cluster (the "downstream" one).
func kubeconfig(t testing.TB) []byte {
	t.Helper()
	c := full.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData, InsecureSkipTLSVerify: c.Insecure}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	cfg.CurrentContext = "test"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
