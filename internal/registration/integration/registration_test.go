package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/registration/names"
)

// registerAgent runs the agent-initiated flow and returns the agent's namespace and credential.
func registerAgent(t *testing.T, ws, clientID string) (string, map[string][]byte, *runningAgent) {
	t.Helper()
	values := newToken(t, ws, "token", time.Hour)
	ns := downstreamNamespace(t, values)
	a := startAgent(t, downstream.Config, ns, clientID)
	return ns, credential(t, downstream.Client, ns), a
}

func getCluster(t *testing.T, ws, name string) *fleetv1alpha1.Cluster {
	t.Helper()
	c := &fleetv1alpha1.Cluster{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAgentInitiatedRegistrationDeploysAndPrunes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	agentNS, cred, _ := registerAgent(t, ws, "agent-e2e-"+ws)

	// The bootstrap secret is gone once the credential is persisted.
	eventually(t, 10*time.Second, func() error {
		err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: manifests.BootstrapSecret}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("bootstrap secret still there: %w", err)
	})
	clusterName, clusterNS := string(cred[fleetv1alpha1.KeyClusterName]), string(cred[fleetv1alpha1.KeyDeploymentNamespace])
	eventually(t, 20*time.Second, func() error {
		if c := getCluster(t, ws, clusterName); c.Status.Agent.LastSeen == nil || c.Status.Namespace != clusterNS {
			return fmt.Errorf("no heartbeat yet: %+v", c.Status)
		}
		return nil
	})

	target := downstream.Namespace(t)
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
	}
	// Labelled as part of the agent's own installation: dropping it from a Bundle (as the
	// agent-management Bundle drops the RBAC of an agent-initiated cluster) must not prune it.
	own := cm("own")
	own.Labels = map[string]string{"app.kubernetes.io/name": manifests.Name, fleetv1alpha1.ManagedLabel: "true"}
	bd := &fleetv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "app"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "v1", Options: fleetv1alpha1.BundleDeploymentOptions{DefaultNamespace: target},
			Manifests: rawManifests(t, cm("keep"), cm("drop"), own)},
	}
	if err := mgmt.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitApplied := func(id string) {
		eventually(t, 30*time.Second, func() error {
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
				return err
			}
			if bd.Status.AppliedDeploymentID != id || !bd.Status.Ready || !meta.IsStatusConditionTrue(bd.Status.Conditions, fleetv1alpha1.ConditionApplied) {
				return fmt.Errorf("not applied: %+v", bd.Status)
			}
			return nil
		})
	}
	waitApplied("v1")
	for _, n := range []string{"keep", "drop", "own"} {
		got := &corev1.ConfigMap{}
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: n}, got); err != nil {
			t.Fatalf("configmap %s not applied downstream: %v", n, err)
		}
		if got.ManagedFields[0].Manager != "drover-agent" {
			t.Errorf("configmap %s field manager %q, want drover-agent", n, got.ManagedFields[0].Manager)
		}
	}
	if len(bd.Status.Resources) != 3 {
		t.Errorf("status resources %+v, want 3", bd.Status.Resources)
	}

	// A patch, not an update: the agent writes the status concurrently.
	patch := client.MergeFrom(bd.DeepCopy())
	bd.Spec.DeploymentID, bd.Spec.Manifests = "v2", rawManifests(t, cm("keep"))
	if err := mgmt.Client.Patch(ctx, bd, patch); err != nil {
		t.Fatal(err)
	}
	waitApplied("v2")
	eventually(t, 10*time.Second, func() error {
		err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "drop"}, &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("dropped configmap not pruned: %w", err)
	})
	for _, n := range []string{"keep", "own"} {
		if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: n}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("configmap %s: %v", n, err)
		}
	}
}

// check asserts that an action is allowed (nil error) or forbidden/unauthorized.
func check(t *testing.T, name string, allowed bool, err error) {
	t.Helper()
	switch {
	case allowed && err != nil:
		t.Errorf("%s: got %v, want allowed", name, err)
	case !allowed && !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err):
		t.Errorf("%s: got %v, want Forbidden", name, err)
	}
}

// watchSecrets is the error of starting a watch on Secrets in ns with only token.
func watchSecrets(t *testing.T, token []byte, ns string) error {
	t.Helper()
	cfg := rest.AnonymousClientConfig(mgmt.Config)
	cfg.BearerToken = string(token)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: register.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), &corev1.SecretList{}, client.InNamespace(ns))
	if w != nil {
		w.Stop()
	}
	return err
}

func TestSecurityMatrixWithRealIdentities(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws, otherWS := mgmt.Namespace(t), mgmt.Namespace(t)
	values := newToken(t, ws, "token", time.Hour)
	agentNS := downstreamNamespace(t, values)
	startAgent(t, downstream.Config, agentNS, "matrix-a-"+ws)
	cred := credential(t, downstream.Client, agentNS)
	// A second cluster in the same workspace, registered with another token, to be kept apart
	// from the first. (Registrations made with one token are all answered to that token's
	// import identity: a token is one trust unit.)
	_, other, _ := registerAgentWithToken(t, ws, newToken(t, ws, "token-b", time.Hour), "matrix-b-"+ws)

	imp := tokenClient(t, values[fleetv1alpha1.KeyToken])
	req := tokenClient(t, cred[fleetv1alpha1.KeyToken])
	clusterName, clusterNS := string(cred[fleetv1alpha1.KeyClusterName]), string(cred[fleetv1alpha1.KeyDeploymentNamespace])
	otherNS := string(other[fleetv1alpha1.KeyDeploymentNamespace])
	sys := fleetv1alpha1.SystemRegistrationNamespace

	// The import identity's own answer: a fresh registration, granted, read by that identity.
	cr := &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "request-",
		Labels:      map[string]string{fleetv1alpha1.TokenLabel: "token"},
		Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "matrix-c-" + ws, ClientRandom: "0123456789abcdef0123"}}
	check(t, "import: create ClusterRegistration in its workspace", true, imp.Create(ctx, cr))
	own := names.RegistrationSecretName(cr.Spec.ClientID, cr.Spec.ClientRandom)
	eventually(t, 20*time.Second, func() error { return imp.Get(ctx, client.ObjectKey{Namespace: sys, Name: own}, &corev1.Secret{}) })
	var regSecrets corev1.SecretList
	if err := mgmt.Client.List(ctx, &regSecrets, client.InNamespace(sys), client.MatchingLabels{fleetv1alpha1.ClusterNamespaceLabel: ws}); err != nil || len(regSecrets.Items) < 2 {
		t.Fatalf("registration secrets: %v, %d", err, len(regSecrets.Items))
	}
	for _, s := range regSecrets.Items {
		if s.Labels[fleetv1alpha1.TokenLabel] != "token" {
			check(t, "import: get another registration secret", false, imp.Get(ctx, client.ObjectKeyFromObject(&s), &corev1.Secret{}))
		}
	}
	crOther := cr.DeepCopy()
	crOther.Namespace, crOther.ResourceVersion = otherWS, ""
	importChecks := []struct {
		name string
		err  error
	}{
		{"list registration secrets", imp.List(ctx, &corev1.SecretList{}, client.InNamespace(sys))},
		{"get the token values secret", imp.Get(ctx, client.ObjectKey{Namespace: ws, Name: "token"}, &corev1.Secret{})},
		{"list secrets in its workspace", imp.List(ctx, &corev1.SecretList{}, client.InNamespace(ws))},
		{"create ClusterRegistration in another namespace", imp.Create(ctx, crOther)},
		{"list ClusterRegistrations", imp.List(ctx, &fleetv1alpha1.ClusterRegistrationList{}, client.InNamespace(ws))},
		{"list Clusters", imp.List(ctx, &fleetv1alpha1.ClusterList{}, client.InNamespace(ws))},
		{"list BundleDeployments", imp.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(clusterNS))},
	}
	for _, c := range importChecks {
		check(t, "import: "+c.name, false, c.err)
	}

	bd := &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "probe"},
		Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "x"}}
	if err := mgmt.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	statusPatch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"agent":{"namespace":"x"}}}`))
	ownCluster := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: clusterName}}
	otherCluster := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: string(other[fleetv1alpha1.KeyClusterName])}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: string(cred[fleetv1alpha1.KeyServiceAccount])}}
	requestChecks := []struct {
		name    string
		allowed bool
		err     error
	}{
		{"list BundleDeployments in its namespace", true, req.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(clusterNS))},
		{"get its BundleDeployment", true, req.Get(ctx, client.ObjectKeyFromObject(bd), &fleetv1alpha1.BundleDeployment{})},
		{"patch its BundleDeployment status", true, req.Status().Patch(ctx, bd.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":{"ready":false}}`)))},
		{"patch its Cluster status", true, req.Status().Patch(ctx, ownCluster, statusPatch)},
		{"create a token for itself", true, req.SubResource("token").Create(ctx, sa, tokenRequest())},
		// The status right is for the agent's own report (status.agent); drover's admission
		// policy refuses the rest, which RBAC cannot tell apart.
		{"forge its Cluster's conditions", false, req.Status().Patch(ctx, ownCluster, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Forged","message":"all fine","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)))},
		{"patch its Cluster's status.apiServerURL", false, req.Status().Patch(ctx, ownCluster, client.RawPatch(types.MergePatchType, []byte(`{"status":{"apiServerURL":"https://evil.example.com"}}`)))},
		{"patch its Cluster's status.observedGeneration", false, req.Status().Patch(ctx, ownCluster, client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":99}}`)))},
		{"patch its Cluster spec", false, req.Patch(ctx, ownCluster, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"agentNamespace":"x"}}`)))},
		{"get its Cluster", false, req.Get(ctx, client.ObjectKeyFromObject(ownCluster), &fleetv1alpha1.Cluster{})},
		{"patch another Cluster's status", false, req.Status().Patch(ctx, otherCluster, statusPatch)},
		{"create a BundleDeployment", false, req.Create(ctx, &fleetv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "evil"}, Spec: fleetv1alpha1.BundleDeploymentSpec{DeploymentID: "x"}})},
		{"update a BundleDeployment spec", false, req.Update(ctx, bd.DeepCopy())},
		{"list BundleDeployments of another cluster", false, req.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(otherNS))},
		{"list secrets in its namespace", false, req.List(ctx, &corev1.SecretList{}, client.InNamespace(clusterNS))},
		{"watch secrets in its namespace", false, watchSecrets(t, cred[fleetv1alpha1.KeyToken], clusterNS)},
		{"list configmaps in its namespace", false, req.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(clusterNS))},
		{"get a configmap in its namespace", false, req.Get(ctx, client.ObjectKey{Namespace: clusterNS, Name: "kube-root-ca.crt"}, &corev1.ConfigMap{})},
		{"read secrets in another cluster's namespace", false, req.List(ctx, &corev1.SecretList{}, client.InNamespace(otherNS))},
		{"read registration secrets", false, req.List(ctx, &corev1.SecretList{}, client.InNamespace(sys))},
		{"read secrets in the workspace", false, req.List(ctx, &corev1.SecretList{}, client.InNamespace(ws))},
		{"create ClusterRegistrations", false, req.Create(ctx, crOther.DeepCopy())},
		{"create a token for another ServiceAccount", false, req.SubResource("token").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: string(other[fleetv1alpha1.KeyServiceAccount])}}, tokenRequest())},
		{"list roles in its namespace", false, req.List(ctx, &rbacv1.RoleList{}, client.InNamespace(clusterNS))},
	}
	for _, c := range requestChecks {
		check(t, "request: "+c.name, c.allowed, c.err)
	}
	got := getCluster(t, ws, clusterName)
	if got.Status.APIServerURL == "https://evil.example.com" || got.Status.ObservedGeneration == 99 {
		t.Errorf("the agent's identity changed drover's status fields: %+v", got.Status)
	}
	for _, cond := range got.Status.Conditions {
		if cond.Reason == "Forged" {
			t.Errorf("the agent's identity set condition %+v", cond)
		}
	}

	t.Run("expired token identity is rejected", func(t *testing.T) {
		short := newToken(t, ws, "short", 3*time.Second)
		c := tokenClient(t, short[fleetv1alpha1.KeyToken])
		eventually(t, 20*time.Second, func() error {
			err := c.Create(ctx, &fleetv1alpha1.ClusterRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ws, GenerateName: "late-"},
				Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: "late", ClientRandom: "0123456789abcdef0123"}})
			if apierrors.IsUnauthorized(err) {
				return nil
			}
			return fmt.Errorf("expired import token: got %w, want Unauthorized", err)
		})
		eventually(t, 10*time.Second, func() error {
			err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: "short"}, &fleetv1alpha1.ClusterRegistrationToken{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("expired token object still there: %w", err)
		})
		// Everything the token created is gone with it.
		byToken := client.MatchingLabels{fleetv1alpha1.TokenLabel: "short"}
		for _, list := range []client.ObjectList{&corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &corev1.SecretList{}} {
			if err := mgmt.Client.List(ctx, list, client.InNamespace(ws), byToken); err != nil || meta.LenList(list) != 0 {
				t.Errorf("%T left by the expired token: %v, %d", list, err, meta.LenList(list))
			}
		}
	})

	t.Run("re-created cluster does not inherit old rights", func(t *testing.T) {
		oldCluster := getCluster(t, ws, clusterName)
		if err := mgmt.Client.Delete(ctx, oldCluster); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(oldCluster), &fleetv1alpha1.Cluster{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("cluster not gone: %w", err)
		})
		fresh := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: clusterName}, Spec: oldCluster.Spec}
		if err := mgmt.Client.Create(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, func() error {
			if c := getCluster(t, ws, clusterName); c.Status.Namespace == "" {
				return fmt.Errorf("no namespace yet")
			}
			return nil
		})
		// Everything created for the old Cluster is gone (its namespace is terminating).
		byUID := client.MatchingLabels{fleetv1alpha1.ClusterUIDLabel: string(oldCluster.UID)}
		for _, list := range []client.ObjectList{&corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &corev1.SecretList{}} {
			if err := mgmt.Client.List(ctx, list, byUID); err != nil || meta.LenList(list) != 0 {
				t.Errorf("%T left for the deleted cluster: %v, %d", list, err, meta.LenList(list))
			}
		}
		oldNS := &corev1.Namespace{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Name: clusterNS}, oldNS); err == nil && oldNS.DeletionTimestamp.IsZero() {
			t.Errorf("old cluster namespace %s not deleted", clusterNS)
		}
		newNS := getCluster(t, ws, clusterName).Status.Namespace
		if newNS == clusterNS {
			t.Errorf("re-created cluster reuses namespace %s", newNS)
		}
		check(t, "old request identity: list new namespace", false, req.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(newNS)))
		check(t, "old request identity: list old namespace", false, req.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(clusterNS)))
		check(t, "old request identity: patch cluster status", false, req.Status().Patch(ctx, ownCluster, statusPatch))
	})
}

func registerAgentWithToken(t *testing.T, ws string, values map[string][]byte, clientID string) (string, map[string][]byte, *runningAgent) {
	t.Helper()
	ns := downstreamNamespace(t, values)
	a := startAgent(t, downstream.Config, ns, clientID)
	return ns, credential(t, downstream.Client, ns), a
}
