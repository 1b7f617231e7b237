package crds

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	admissionfiles "github.com/droverhq/drover/config/admission"
)

// Policies are drover's admission policies and their bindings (config/admission), parsed.
type Policies struct {
	Policies []*admissionv1.ValidatingAdmissionPolicy
	Bindings []*admissionv1.ValidatingAdmissionPolicyBinding
}

// Objects returns the policies, then the bindings, with their kinds set (for server-side apply).
func (p Policies) Objects() []client.Object {
	var out []client.Object
	for _, o := range p.Policies {
		o.APIVersion, o.Kind = admissionv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicy"
		out = append(out, o)
	}
	for _, o := range p.Bindings {
		o.APIVersion, o.Kind = admissionv1.SchemeGroupVersion.String(), "ValidatingAdmissionPolicyBinding"
		out = append(out, o)
	}
	return out
}

// LoadPolicies returns the admission policies embedded in the binary.
func LoadPolicies() (Policies, error) {
	var p Policies
	entries, err := fs.ReadDir(admissionfiles.Policies, ".")
	if err != nil {
		return p, fmt.Errorf("read embedded admission policies: %w", err)
	}
	for _, e := range entries {
		data, err := admissionfiles.Policies.ReadFile(e.Name())
		if err != nil {
			return p, fmt.Errorf("read embedded admission policy %s: %w", e.Name(), err)
		}
		for i, doc := range strings.Split(string(data), "\n---\n") {
			var typeMeta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &typeMeta); err != nil {
				return p, fmt.Errorf("parse %s document %d: %w", e.Name(), i+1, err)
			}
			switch typeMeta.Kind {
			case "ValidatingAdmissionPolicy":
				o := &admissionv1.ValidatingAdmissionPolicy{}
				err = yaml.UnmarshalStrict([]byte(doc), o)
				p.Policies = append(p.Policies, o)
			case "ValidatingAdmissionPolicyBinding":
				o := &admissionv1.ValidatingAdmissionPolicyBinding{}
				err = yaml.UnmarshalStrict([]byte(doc), o)
				p.Bindings = append(p.Bindings, o)
			default:
				err = fmt.Errorf("unexpected kind %q", typeMeta.Kind)
			}
			if err != nil {
				return p, fmt.Errorf("parse %s document %d: %w", e.Name(), i+1, err)
			}
		}
	}
	return p, nil
}

// InstallPolicies applies drover's admission policies and bindings (server-side apply, so
// upgrades are in place). The CRDs they check must be installed first. The API server enforces
// a binding moments after it is written.
func InstallPolicies(ctx context.Context, c client.Client) error {
	p, err := LoadPolicies()
	if err != nil {
		return err
	}
	for _, o := range p.Objects() {
		err := c.Patch(ctx, o, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership) //nolint:staticcheck // client.Apply with a typed object is fine here
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("apply %s %s: the API server does not serve admissionregistration.k8s.io/v1 admission policies (Kubernetes 1.30 or later is needed): %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// TypeCheckWarnings are the warnings the cluster's type checker (kube-controller-manager) wrote
// on drover's policies: an expression that does not fit the CRD schema. Nothing before the
// checker ran.
func TypeCheckWarnings(ctx context.Context, c client.Client) ([]string, error) {
	p, err := LoadPolicies()
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, want := range p.Policies {
		got := &admissionv1.ValidatingAdmissionPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, got); err != nil {
			return nil, fmt.Errorf("read ValidatingAdmissionPolicy %s: %w", want.Name, err)
		}
		if tc := got.Status.TypeChecking; tc != nil && got.Status.ObservedGeneration == got.Generation {
			for _, w := range tc.ExpressionWarnings {
				warnings = append(warnings, want.Name+" "+w.FieldRef+": "+w.Warning)
			}
		}
	}
	return warnings, nil
}

// MissingPolicies lists drover's admission policies and bindings the cluster lacks, as
// "kind/name".
func MissingPolicies(ctx context.Context, c client.Client) ([]string, error) {
	p, err := LoadPolicies()
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, o := range p.Objects() {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		got := o.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKey{Name: o.GetName()}, got)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			missing = append(missing, kind+"/"+o.GetName())
		case err != nil:
			return nil, fmt.Errorf("read %s %s: %w", kind, o.GetName(), err)
		}
	}
	return missing, nil
}
