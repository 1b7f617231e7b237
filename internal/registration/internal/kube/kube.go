// Package kube holds the small building blocks the registration controllers share: server-side
// apply of the objects they own, token requests and status patches.
package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// FieldOwner is the field manager of everything the registration controllers write.
const FieldOwner = "drover-registration"

// Apply creates or updates obj with server-side apply: one request, no read, idempotent.
func Apply(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration) error {
	return c.Apply(ctx, obj, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// Create creates obj from its apply configuration, falling back to server-side apply when it
// exists. A plain create is cheaper for the API server than an apply (no managed-fields merge),
// and in the grant path nearly every object is new.
func Create(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration) error {
	o, err := typed(c, obj)
	if err != nil {
		return err
	}
	err = c.Create(ctx, o, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return Apply(ctx, c, obj)
	}
	return err
}

// CreateIfAbsent creates obj unless it exists (which is left as it is).
func CreateIfAbsent(ctx context.Context, c client.Client, obj runtime.ApplyConfiguration) error {
	o, err := typed(c, obj)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, o, client.FieldOwner(FieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// typed converts an apply configuration to the scheme's typed object (sent as protobuf, which
// costs the API server less to decode than JSON), or to unstructured for unknown kinds.
func typed(c client.Client, obj runtime.ApplyConfiguration) (client.Object, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode %T: %w", obj, err)
	}
	o, err := c.Scheme().New(u.GroupVersionKind())
	if err != nil {
		return u, nil //nolint:nilerr // not in the scheme: sent as unstructured
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
		return nil, fmt.Errorf("convert %s: %w", u.GroupVersionKind().Kind, err)
	}
	co, ok := o.(client.Object)
	if !ok {
		return u, nil
	}
	return co, nil
}

// ManagedLabels are the labels of every object created for a cluster or registration.
func ManagedLabels(extra map[string]string) map[string]string {
	l := map[string]string{fleetv1alpha1.ManagedLabel: "true"}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// ServiceAccount is an apply configuration for a ServiceAccount.
func ServiceAccount(ns, name string, labels map[string]string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(name, ns).WithLabels(ManagedLabels(labels))
}

// Role is an apply configuration for a Role.
func Role(ns, name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1ac.RoleApplyConfiguration {
	r := rbacv1ac.Role(name, ns).WithLabels(ManagedLabels(labels))
	for _, rule := range rules {
		r.WithRules(rbacv1ac.PolicyRule().WithAPIGroups(rule.APIGroups...).WithResources(rule.Resources...).
			WithResourceNames(rule.ResourceNames...).WithVerbs(rule.Verbs...))
	}
	return r
}

// RoleBinding binds the Role ns/role to the ServiceAccounts saNS/saNames.
func RoleBinding(ns, name string, labels map[string]string, role, saNS string, saNames ...string) *rbacv1ac.RoleBindingApplyConfiguration {
	rb := rbacv1ac.RoleBinding(name, ns).WithLabels(ManagedLabels(labels)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(role))
	for _, sa := range saNames {
		rb.WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(saNS).WithName(sa))
	}
	return rb
}

// Secret is an apply configuration for a Secret.
func Secret(ns, name, typ string, labels map[string]string, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, ns).WithLabels(ManagedLabels(labels)).WithType(corev1.SecretType(typ)).WithData(data)
}

// RequestToken issues a token for the ServiceAccount ns/name through the TokenRequest API. It
// dies with the ServiceAccount (tokens are bound to its UID) or at the returned expiry.
func RequestToken(ctx context.Context, c client.Client, ns, name string, ttl time.Duration) (string, time.Time, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(max(ttl, 10*time.Minute) / time.Second)),
	}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", time.Time{}, fmt.Errorf("request token for service account %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}

// SetCondition sets a condition and reports whether it changed.
func SetCondition(conds *[]metav1.Condition, gen int64, typ string, status bool, reason, msg string) bool {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// PatchStatus merge-patches obj's status from before; an unchanged status is not written.
func PatchStatus(ctx context.Context, c client.Client, obj, before client.Object) error {
	if equality.Semantic.DeepEqual(obj, before) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch status of %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// Delete deletes obj, ignoring NotFound.
func Delete(ctx context.Context, c client.Client, obj client.Object) error {
	if err := client.IgnoreNotFound(c.Delete(ctx, obj)); err != nil {
		return fmt.Errorf("delete %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// EnsureNamespace applies a namespace with labels.
func EnsureNamespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	if err := Apply(ctx, c, corev1ac.Namespace(name).WithLabels(ManagedLabels(labels))); err != nil {
		return fmt.Errorf("apply namespace %s: %w", name, err)
	}
	return nil
}
