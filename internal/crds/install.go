// Package crds installs drover's CustomResourceDefinitions into a cluster.
package crds

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	crdfiles "github.com/droverhq/drover/config/crd"
	"github.com/droverhq/drover/internal/version"
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

// Install applies every embedded CRD (server-side apply, so upgrades are in place), stamped
// with this binary's version (VersionAnnotation), except those an older binary must not
// overwrite (see Keep), and waits until each is Established.
func Install(ctx context.Context, c client.Client) error {
	list, err := Load()
	if err != nil {
		return err
	}
	running := version.Get().Version
	log := crlog.FromContext(ctx)
	for _, crd := range list {
		current := &apiextensionsv1.CustomResourceDefinition{}
		switch err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, current); {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return fmt.Errorf("read CRD %s: %w", crd.Name, err)
		}
		if current != nil {
			if keep, why := Keep(current, crd, running); keep {
				log.Info("Leaving the cluster's CRD as it is: it is newer than this drover's, whose API is a subset of it", "crd", crd.Name, "version", running, "reason", why)
				continue
			}
		}
		crd.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.Kind = "CustomResourceDefinition"
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations[VersionAnnotation] = running
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

// WaitServed waits until the API server's discovery lists every embedded CRD's resource in
// each of its served versions. Established comes first: discovery can lag it by a moment, and
// a manager started in between fails to map the kinds ("no matches for kind"). With CRDs owned
// by Helm or GitOps (not installed by drover) it says which one is missing.
func WaitServed(ctx context.Context, d discovery.DiscoveryInterface, timeout time.Duration) error {
	list, err := Load()
	if err != nil {
		return err
	}
	for _, crd := range list {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			var last error
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
				res, err := d.ServerResourcesForGroupVersion(gv)
				if err != nil {
					last = err
					return false, nil
				}
				for _, r := range res.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return true, nil
					}
				}
				last = fmt.Errorf("%s not listed", crd.Spec.Names.Plural)
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("CRD %s (%s) is not served by the API server (%w): install drover's CRDs (drover server --install-crds, or the chart with installCRDs=true): %w", crd.Name, gv, last, err)
			}
		}
	}
	return nil
}

// Missing lists the embedded CRDs the cluster does not have.
func Missing(ctx context.Context, c client.Client) ([]string, error) {
	list, err := Load()
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, crd := range list {
		err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, crd.Name)
		case err != nil:
			return nil, fmt.Errorf("read CRD %s: %w", crd.Name, err)
		}
	}
	return missing, nil
}

// Ensure makes drover's API definitions ready for the server: with install, it applies the
// CRDs and the admission policy; without (--install-crds=false: Helm or GitOps owns them), it
// checks that they are there, naming what is missing and how to add it. Either way it waits
// until the API server serves every CRD. The policy goes with the CRDs: without it an agent's
// identity could rewrite its Cluster's status, so drover does not run without it.
func Ensure(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, install bool) error {
	if install {
		if err := Install(ctx, c); err != nil {
			return fmt.Errorf("install drover CRDs: %w", err)
		}
	} else {
		missing, err := Missing(ctx, c)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("--install-crds=false but the cluster lacks drover's CRDs %s: install them (the chart with installCRDs=true, or kubectl apply -f config/crd/bases) or drop --install-crds=false", strings.Join(missing, ", "))
		}
	}
	if err := WaitServed(ctx, dc, 30*time.Second); err != nil {
		return err
	}
	if install {
		if err := InstallPolicies(ctx, c); err != nil {
			return fmt.Errorf("install drover's admission policy: %w", err)
		}
		return nil
	}
	missing, err := MissingPolicies(ctx, c)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("--install-crds=false but the cluster lacks drover's admission policy %s, which keeps each agent to its own status report: apply it (kubectl apply -f config/admission, or the chart with installCRDs=true) or drop --install-crds=false", strings.Join(missing, ", "))
	}
	return nil
}
