package rke2

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/droverhq/drover/internal/migration"
	"github.com/droverhq/drover/internal/migration/yamlnode"
)

// ClusterGVK is Rancher's provisioning Cluster; drover does not own the type.
var ClusterGVK = schema.GroupVersionKind{Group: "provisioning.cattle.io", Version: "v1", Kind: "Cluster"}

// Object is the live provisioning Cluster: the document is apiVersion, kind, name, namespace
// and spec; writes replace the spec, only if it is still the one last read (the user or
// Rancher may edit the Cluster during the migration). Not for concurrent use.
type Object struct {
	Editor
	Client client.Client
	Key    types.NamespacedName

	// read is the spec the last Read returned or the last Write stored (nil: none yet).
	read any
}

func (o *Object) get(ctx context.Context) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ClusterGVK)
	if err := o.Client.Get(ctx, o.Key, u); err != nil {
		return nil, fmt.Errorf("get provisioning Cluster %s: %w", o.Key, err)
	}
	return u, nil
}

// Read returns the Cluster's document.
func (o *Object) Read(ctx context.Context) ([]byte, error) {
	u, err := o.get(ctx)
	if err != nil {
		return nil, err
	}
	o.read = runtime.DeepCopyJSONValue(u.Object["spec"])
	doc := map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()},
		"spec":     u.Object["spec"],
	}
	out, err := sigsyaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode provisioning Cluster %s: %w", o.Key, err)
	}
	return out, nil
}

// Write replaces the Cluster's spec with the document's, if the spec is still the one last
// read: otherwise (or on a conflicting update) it returns migration.ErrConflict, so the edit
// is made again on the current spec rather than overwrite a concurrent one. Status and
// metadata changes since the read (Rancher's own) do not count.
func (o *Object) Write(ctx context.Context, doc []byte) error {
	var m map[string]any
	if err := sigsyaml.Unmarshal(doc, &m); err != nil {
		return fmt.Errorf("parse Cluster document: %w", err)
	}
	u, err := o.get(ctx)
	if err != nil {
		return err
	}
	if o.read != nil && !equality.Semantic.DeepEqual(u.Object["spec"], o.read) {
		return fmt.Errorf("provisioning Cluster %s: spec edited since it was read: %w", o.Key, migration.ErrConflict)
	}
	u.Object["spec"] = m["spec"]
	// The update carries the resourceVersion of the get: a change in between is a conflict.
	if err := o.Client.Update(ctx, u); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("provisioning Cluster %s: %w", o.Key, migration.ErrConflict)
		}
		return fmt.Errorf("update provisioning Cluster %s: %w", o.Key, err)
	}
	o.read = runtime.DeepCopyJSONValue(u.Object["spec"])
	return nil
}

// Applied reports whether Rancher has reconciled the latest spec: observedGeneration caught up
// and Ready=True.
func (o *Object) Applied(ctx context.Context) (bool, string, error) {
	u, err := o.get(ctx)
	if err != nil {
		return false, "", err
	}
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if og < u.GetGeneration() {
		return false, fmt.Sprintf("provisioning Cluster %s: configuration generation %d not yet applied (observed %d); Rancher is rolling it out to the machines", o.Key, u.GetGeneration(), og), nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			if m["status"] == "True" {
				return true, "", nil
			}
			return false, fmt.Sprintf("provisioning Cluster %s is not Ready: %v; check the machines' plan status in Rancher", o.Key, m["message"]), nil
		}
	}
	return false, fmt.Sprintf("provisioning Cluster %s has no Ready condition yet", o.Key), nil
}

var _ migration.Distribution = (*Object)(nil)

// File is a Cluster manifest on disk, applied by a command (default kubectl apply -f {file}).
type File struct {
	Editor
	migration.FileBackend
}

var _ migration.Distribution = (*File)(nil)

// CheckDoc refuses a manifest carrying metadata.resourceVersion (one exported with `kubectl
// get -o yaml`): kubectl apply treats it as a precondition, so every apply after the Cluster
// changed (each step changes it, and Rancher updates it) fails with a Conflict.
func (f *File) CheckDoc(doc []byte) []string {
	_, root, err := yamlnode.Parse(doc)
	if err != nil {
		return nil
	}
	if yamlnode.String(root, "metadata", "resourceVersion") != "" {
		return []string{fmt.Sprintf("%s sets metadata.resourceVersion, so applying it fails with a Conflict once the Cluster changes: remove metadata.resourceVersion (and uid, managedFields, creationTimestamp, generation and status) from it, e.g. export it with `kubectl get clusters.provisioning.cattle.io -n NAMESPACE NAME -o yaml` and delete those fields", f.Path)}
	}
	return nil
}

var _ migration.DocChecker = (*File)(nil)
