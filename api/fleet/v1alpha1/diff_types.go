package v1alpha1

import (
	"fmt"
	"strings"
)

// BundleDiff says which downstream differences drift detection ignores.
type BundleDiff struct {
	// Ignore lists fields of the Bundle's objects that may differ downstream without being
	// drift: another controller owns them (an HPA owns a Deployment's /spec/replicas, say).
	// A change at an ignored field is not reported Modified and correctDrift does not revert
	// it; the agent still sets such a field when it creates the object.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Ignore []BundleDiffIgnore `json:"ignore,omitempty"`
}

// BundleDiffIgnore names fields, as JSON pointers, of the Bundle's objects of one kind (and
// optionally one name and namespace).
type BundleDiffIgnore struct {
	// APIVersion of the objects, e.g. "apps/v1".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the objects, e.g. "Deployment".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the object; empty: every object of the kind.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the object; empty: the Bundle's objects in any namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// JSONPointers are the ignored fields (RFC 6901, e.g. "/spec/replicas",
	// "/metadata/annotations/example.com~1owner"); everything below a pointer is ignored too.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^(/([^/~]|~[01])*)+$`
	// +listType=atomic
	JSONPointers []string `json:"jsonPointers"`
}

// Matches reports whether the ignore rule applies to the object of that apiVersion, kind,
// namespace and name.
func (i BundleDiffIgnore) Matches(apiVersion, kind, namespace, name string) bool {
	return i.APIVersion == apiVersion && i.Kind == kind &&
		(i.Name == "" || i.Name == name) && (i.Namespace == "" || i.Namespace == namespace)
}

// ParseJSONPointer splits an RFC 6901 JSON pointer into its reference tokens, unescaped ("~1"
// is "/", "~0" is "~"). The pointer to the whole document ("") is refused: ignoring a whole
// object is not drift detection.
func ParseJSONPointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q: must start with \"/\" (RFC 6901)", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("JSON pointer %q: \"~\" must be escaped as \"~0\" (RFC 6901)", p)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// Validate checks every rule's kind and pointers; the error names the rule (by index) and the
// pointer.
func (d *BundleDiff) Validate() error {
	if d == nil {
		return nil
	}
	for i, ig := range d.Ignore {
		if ig.APIVersion == "" || ig.Kind == "" {
			return fmt.Errorf("ignore[%d]: apiVersion and kind are required", i)
		}
		if len(ig.JSONPointers) == 0 {
			return fmt.Errorf("ignore[%d]: jsonPointers is empty", i)
		}
		for j, p := range ig.JSONPointers {
			if _, err := ParseJSONPointer(p); err != nil {
				return fmt.Errorf("ignore[%d].jsonPointers[%d]: %w", i, j, err)
			}
		}
	}
	return nil
}
