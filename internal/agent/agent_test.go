package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/test/envtest"
)

// env is one API server standing for both the management cluster (registrations, the import
// identity) and the agent's downstream cluster (its namespace, bootstrap secret and status).
// No drover controllers run: the tests answer (or refuse) registrations themselves.
var env *envtest.Cluster

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = envtest.Start("agent", envtest.Options{InstallCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// importIdentity creates a registration token's import identity in the workspace ws, as
// drover's token controller does (it may create ClusterRegistrations there), plus extra rules,
// and returns the bootstrap values an agent gets.
func importIdentity(t *testing.T, ws string, extra ...rbacv1.PolicyRule) map[string][]byte {
	t.Helper()
	ctx := t.Context()
	const token, sa = "edge", "import-edge-0123abcd" // the name drover's admission policy wants
	cfg, err := env.ServiceAccountConfig(ctx, ws, sa)
	if err != nil {
		t.Fatal(err)
	}
	rules := append([]rbacv1.PolicyRule{{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"clusterregistrations"}, Verbs: []string{"create"}}}, extra...)
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: sa}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ws, Name: sa}}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return map[string][]byte{
		fleetv1alpha1.KeyAPIServerURL: []byte(env.Config.Host), fleetv1alpha1.KeyAPIServerCA: env.Config.CAData,
		fleetv1alpha1.KeyToken: []byte(cfg.BearerToken), fleetv1alpha1.KeyTokenName: []byte(token),
		fleetv1alpha1.KeyClusterNamespace: []byte(ws), fleetv1alpha1.KeySystemRegistrationNamespace: []byte(env.Namespace(t)),
	}
}

// runAgent runs an agent in a fresh downstream namespace with the bootstrap values until the
// test ends, and returns its namespace and log.
func runAgent(t *testing.T, bootstrap map[string][]byte) (string, *envtest.SyncBuffer) {
	t.Helper()
	ns := env.Namespace(t)
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifests.BootstrapSecret}, Data: bootstrap}); err != nil {
		t.Fatal(err)
	}
	logs := &envtest.SyncBuffer{}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(logs, prefix, args) }, funcr.Options{Verbosity: 1})
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: env.Config, Namespace: ns, ClientID: "edge-" + ns, MetricsAddr: "0", HealthAddr: "0"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return ns, logs
}

// agentStatus waits until the agent's status ConfigMap reports reason, and returns its message.
func agentStatus(t *testing.T, ns, reason string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: StatusConfigMap}, cm); err != nil {
			return err
		}
		if cm.Data["reason"] != reason {
			return fmt.Errorf("agent status %v, want reason %s", cm.Data, reason)
		}
		return nil
	})
	return cm.Data["message"]
}

// registration waits for the agent's ClusterRegistration in ws.
func registration(t *testing.T, ws string) *fleetv1alpha1.ClusterRegistration {
	t.Helper()
	var list fleetv1alpha1.ClusterRegistrationList
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.List(t.Context(), &list, client.InNamespace(ws)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d ClusterRegistrations, want 1", len(list.Items))
		}
		return nil
	})
	return &list.Items[0]
}

// refuse sets the registration's Granted condition to False, as drover's grant controller
// does when it refuses one.
func refuse(t *testing.T, cr *fleetv1alpha1.ClusterRegistration, reason, msg string) {
	t.Helper()
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	before := cr.DeepCopy()
	meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionGranted, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: cr.Generation})
	if err := env.Client.Status().Patch(t.Context(), cr, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrationWaitShowsDownstream: while an agent waits for the answer to its registration,
// its status ConfigMap says so, naming the ClusterRegistration and where a refusal's reason is
// (drover's import identity may not read its registration).
func TestRegistrationWaitShowsDownstream(t *testing.T) {
	ws := env.Namespace(t)
	ns, _ := runAgent(t, importIdentity(t, ws))
	cr := registration(t, ws)
	msg := agentStatus(t, ns, fleetv1alpha1.ReasonPending)
	for _, want := range []string{"Waiting for the management cluster to grant ClusterRegistration " + ws + "/" + cr.Name,
		"kubectl -n " + ws + " describe clusterregistration " + cr.Name} {
		if !strings.Contains(msg, want) {
			t.Errorf("agent status message %q lacks %q", msg, want)
		}
	}
}

// TestRegistrationRefusalShowsDownstream: an agent whose registration is refused (and which may
// read its ClusterRegistration) logs the refusal's reason and message once per change and
// reports them in its status ConfigMap, while it waits in case the registration is granted
// later.
func TestRegistrationRefusalShowsDownstream(t *testing.T) {
	ws := env.Namespace(t)
	read := rbacv1.PolicyRule{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"clusterregistrations"}, Verbs: []string{"get"}}
	ns, logs := runAgent(t, importIdentity(t, ws, read))
	cr := registration(t, ws)
	agentStatus(t, ns, fleetv1alpha1.ReasonPending)

	const full = "token edge has registered spec.maxClusters (1) clusters already"
	refuse(t, cr, fleetv1alpha1.ReasonTokenMaxClusters, full)
	msg := agentStatus(t, ns, fleetv1alpha1.ReasonTokenMaxClusters)
	if want := "ClusterRegistration " + ws + "/" + cr.Name + " was refused by the management cluster (TokenMaxClustersReached): " + full; msg != want {
		t.Errorf("agent status message %q, want %q", msg, want)
	}
	const taken = "Cluster edge is registered with another token"
	refuse(t, cr, fleetv1alpha1.ReasonClusterRegistered, taken)
	if msg := agentStatus(t, ns, fleetv1alpha1.ReasonClusterRegistered); !strings.HasSuffix(msg, "(ClusterAlreadyRegistered): "+taken) {
		t.Errorf("agent status message %q, want the refusal's", msg)
	}
	// One line per refusal (that a refusal read again is not logged again is
	// register.TestGrantWatchReportsRefusalOncePerChange's).
	lines := strings.Split(logs.String(), "\n")
	var refusals []string
	for _, l := range lines {
		if strings.Contains(l, "Registration refused by the management cluster") {
			refusals = append(refusals, l)
		}
	}
	if len(refusals) != 2 || !strings.Contains(refusals[0], `"reason"="TokenMaxClustersReached"`) || !strings.Contains(refusals[0], full) ||
		!strings.Contains(refusals[1], `"reason"="ClusterAlreadyRegistered"`) || !strings.Contains(refusals[1], taken) {
		t.Errorf("refusal log lines %q, want one per refusal with its reason and message", refusals)
	}
}

// TestRejectedImportTokenSaysWhatToDo: an import token the management cluster no longer
// accepts (its token was deleted or expired) fails the registration with what to do about it,
// in the agent's status ConfigMap and log; the token itself is in neither.
func TestRejectedImportTokenSaysWhatToDo(t *testing.T) {
	ws := env.Namespace(t)
	boot := importIdentity(t, ws)
	// Deleting the token deletes its import identity, and with it every token issued for it.
	if err := env.Client.Delete(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "import-edge-0123abcd"}}); err != nil {
		t.Fatal(err)
	}
	ns, logs := runAgent(t, boot)
	msg := agentStatus(t, ns, fleetv1alpha1.ReasonRegistrationFailed)
	want := "create ClusterRegistration at " + env.Config.Host + ": Unauthorized: the import token was not accepted: it may have expired (the token's spec.ttl) or been deleted; " +
		"create a new token (drover token create) and reinstall the agent with it"
	if !strings.Contains(msg, want) {
		t.Errorf("agent status message %q lacks %q", msg, want)
	}
	if !strings.Contains(logs.String(), "drover token create") {
		t.Errorf("the agent's log does not say what to do:\n%s", logs)
	}
	if tok := string(boot[fleetv1alpha1.KeyToken]); strings.Contains(msg, tok) || strings.Contains(logs.String(), tok) {
		t.Error("the import token is in the agent's status or log")
	}
}
