// Package crds installs drover's CustomResourceDefinitions into a cluster.
package crds

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	crdfiles "github.com/droverhq/drover/config/crd"
)

const fieldManager = "drover"

// Load returns the CRDs embedded in the binary.
func Load() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(crdfiles.Bases, "bases")
	if err != nil {
		return nil, fmt.Errorf("read embedded CRDs: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		data, err := crdfiles.Bases.ReadFile(path.Join("bases", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read embedded CRD %s: %w", e.Name(), err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("parse embedded CRD %s: %w", e.Name(), err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Install applies every embedded CRD (server-side apply, so upgrades are in place) and waits
// until each is Established.
func Install(ctx context.Context, c client.Client) error {
	list, err := Load()
	if err != nil {
		return err
	}
	for _, crd := range list {
		crd.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.Kind = "CustomResourceDefinition"
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply with a typed object is fine here
			return fmt.Errorf("apply CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range list {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	return nil
}
