package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/heartbeat"
	"github.com/droverhq/drover/internal/version"
)

// TestHeartbeatWaitsForStatusRight runs the agent's heartbeat as a real request identity that
// can list its BundleDeployments but not yet patch its Cluster's status (a grant whose
// bookkeeping is still queued): it keeps beating until the right arrives, and stops with
// Forbidden once the identity cannot list its BundleDeployments either (revoked).
func TestHeartbeatWaitsForStatusRight(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws, deployNS := mgmt.Namespace(t), mgmt.Namespace(t)
	c := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hb"}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: deployNS, Name: "request"}}
	bdReader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: deployNS, Name: "bd-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"bundledeployments"}, Verbs: []string{"list"}}}}
	statusPatcher := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "status"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{fleetv1alpha1.GroupVersion.Group}, Resources: []string{"clusters/status"}, ResourceNames: []string{"hb"}, Verbs: []string{"patch"}}}}
	binding := func(role *rbacv1.Role) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: deployNS, Name: sa.Name}}}
	}
	for _, o := range []client.Object{c, sa, bdReader, binding(bdReader), statusPatcher} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ttl := int64(3600)
	tr, err := mgmt.Clientset.CoreV1().ServiceAccounts(deployNS).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := tokenClient(t, []byte(tr.Status.Token))

	// The beats refused while the right is on its way are expected: logged as information, not
	// as errors (a new agent's first seconds would otherwise print errors in its log).
	var mu sync.Mutex
	var errorLogs, waitLogs int
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(args, `"error"`) && strings.Contains(args, "Checking in"):
			errorLogs++
		case strings.Contains(args, "the right is on its way"):
			waitLogs++
		}
	}, funcr.Options{})
	runCtx, cancel := context.WithCancel(logr.NewContext(ctx, logger))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- heartbeat.Run(runCtx, req, req, ws, "hb", "drover-agent", deployNS, 100*time.Millisecond, nil)
	}()

	// Without the status right, beats are Forbidden; the heartbeat keeps going.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("heartbeat stopped while the credential works: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	mu.Lock()
	if errorLogs != 0 || waitLogs == 0 {
		t.Errorf("while the right was on its way: %d error logs (want 0), %d waiting logs (want some)", errorLogs, waitLogs)
	}
	mu.Unlock()
	if err := mgmt.Client.Create(ctx, binding(statusPatcher)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		got := getCluster(t, ws, "hb")
		if got.Status.Agent.LastSeen == nil {
			return errors.New("no heartbeat yet")
		}
		// The beat says which agent runs there.
		if v := got.Status.Agent.Version; v != version.Get().Version {
			return fmt.Errorf("status.agent.version %q, want the agent's %q", v, version.Get().Version)
		}
		// And what it can do, through the agent identity's right and the CRD's validation.
		if f := got.Status.Agent.Features; !slices.Contains(f, fleetv1alpha1.AgentFeatureHelmValues) || !got.Status.Agent.HasFeature(fleetv1alpha1.AgentFeatureHelmValues) {
			return fmt.Errorf("status.agent.features %q, want %q reported", f, fleetv1alpha1.AgentFeatureHelmValues)
		}
		return nil
	})

	// The status right is the agent's to check in, not to move its cluster: a compromised agent
	// cannot point status.namespace at another cluster's namespace, nor remove it.
	for _, patch := range []string{`{"status":{"namespace":"cluster-someone-else"}}`, `{"status":{"namespace":null}}`} {
		err := req.Status().Patch(ctx, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hb"}}, client.RawPatch(types.MergePatchType, []byte(patch)))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.namespace cannot change once set") {
			t.Errorf("the agent's identity patched %s: %v, want it refused as invalid", patch, err)
		}
	}
	if got := getCluster(t, ws, "hb"); got.Status.Namespace == "" || got.Status.Namespace == "cluster-someone-else" {
		t.Errorf("status.namespace is %q after the agent's attempts", got.Status.Namespace)
	}

	// Revoked: neither right any more. The heartbeat stops with Forbidden.
	for _, rb := range []*rbacv1.RoleBinding{binding(statusPatcher), binding(bdReader)} {
		if err := mgmt.Client.Delete(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if !apierrors.IsForbidden(err) {
			t.Fatalf("heartbeat stopped with %v, want Forbidden", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("heartbeat kept going with a revoked credential")
	}
}
