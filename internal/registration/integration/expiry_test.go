package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/clusterregistration"
	"github.com/droverhq/drover/internal/registration/names"
)

// TestAnswerExpiry: after AnswerTTL the registration secret is deleted, and once every answer of
// its window has expired, so are the import identity's reader Role and RoleBinding. The suite's
// controllers keep answers 30 minutes; this test drives a second registration Reconciler with a
// one-second AnswerTTL over the same registration.
func TestAnswerExpiry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ws := mgmt.Namespace(t)
	_, cred, a := registerAgent(t, ws, "expiry-"+ws)
	a.stop()
	var regs fleetv1alpha1.ClusterRegistrationList
	eventually(t, 20*time.Second, func() error {
		if err := mgmt.Client.List(ctx, &regs, client.InNamespace(ws)); err != nil {
			return err
		}
		if len(regs.Items) != 1 || !regs.Items[0].Status.Granted {
			return fmt.Errorf("registrations %d, want 1 granted", len(regs.Items))
		}
		return nil
	})
	cr := regs.Items[0]
	secretName := names.AnswerSecretName(cr.Annotations, cr.Spec.ClientID, cr.Spec.ClientRandom)
	sys := fleetv1alpha1.SystemRegistrationNamespace
	byToken := client.MatchingLabels{fleetv1alpha1.TokenLabel: "token", fleetv1alpha1.ClusterNamespaceLabel: ws}
	var roles rbacv1.RoleList
	if err := mgmt.Client.List(ctx, &roles, client.InNamespace(sys), byToken); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(roles.Items, func(r rbacv1.Role) bool { return slices.Contains(r.Rules[0].ResourceNames, secretName) }) {
		t.Fatalf("no reader Role names %s: %+v", secretName, roles.Items)
	}
	if string(cred[fleetv1alpha1.KeyClusterName]) == "" {
		t.Fatal("no credential")
	}

	r := &clusterregistration.Reconciler{Client: mgmt.Client, APIReader: mgmt.Client, AnswerTTL: time.Second, ReaderWindow: testReaderWindow}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cr)}
	eventually(t, 30*time.Second, func() error {
		if _, err := r.Reconcile(ctx, req); err != nil {
			return err
		}
		err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: sys, Name: secretName}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("registration secret still there (%w)", err)
		}
		got := &fleetv1alpha1.ClusterRegistration{}
		if err := mgmt.Client.Get(ctx, req.NamespacedName, got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionGranted); c == nil || c.Reason != "SecretExpired" {
			return fmt.Errorf("granted condition %+v", c)
		}
		var roles rbacv1.RoleList
		var bindings rbacv1.RoleBindingList
		if err := mgmt.Client.List(ctx, &roles, client.InNamespace(sys), byToken); err != nil {
			return err
		}
		if err := mgmt.Client.List(ctx, &bindings, client.InNamespace(sys), byToken); err != nil {
			return err
		}
		if len(roles.Items)+len(bindings.Items) > 0 {
			return fmt.Errorf("%d reader Roles and %d RoleBindings left", len(roles.Items), len(bindings.Items))
		}
		return nil
	})
}
