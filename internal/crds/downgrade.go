package crds

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// VersionAnnotation is the annotation on each CRD drover applies that records the version of
// the drover binary that applied it last (internal/version: v1.2.3 for a release,
// v1.2.3-4-gabcdef a build after it, v0.0.0-dev or v0.0.0-dev-<commit> a development build).
// It is under fleet.drover.io/, the prefix drover reserves for its labels and annotations
// (api/fleet/v1alpha1.LabelPrefix).
const VersionAnnotation = fleetv1alpha1.LabelPrefix + "version"

// Keep says whether Install must leave the cluster's CRD current as it is rather than apply
// embedded (this binary's, running version), and why.
//
// Every replica of drover applies its CRDs at start, with ForceOwnership. An older binary
// starting next to a newer one (a helm rollback, a pod of the old ReplicaSet restarting
// mid-rollout, a stale `drover server --kubeconfig` on a laptop) would otherwise take fields
// out of the schema, and the next write of an object that has them would prune their values
// for good. An older drover runs fine on newer CRDs (within v1alpha1 a newer schema is a
// superset), so it keeps them. The rule:
//
//   - A release is a version vX.Y.Z[-suffix] other than v0.0.0-*; its suffix (a git describe
//     distance, -dirty, a pre-release, a Go pseudo-version) is ignored: only X.Y.Z is compared.
//     Anything else (v0.0.0-dev..., an unparsable value) is a development build.
//   - Applied by a release and running a release: keep when the applier's X.Y.Z is greater;
//     apply when it is smaller (an upgrade, authoritative even if it drops a field); when equal,
//     the schema decides (below).
//   - Applied by a release and running a development build: keep. A development build has no
//     place in the release order, so it never overwrites a released drover's CRDs.
//   - Otherwise (no annotation: applied by a drover before it stamped them, or by kubectl or
//     GitOps; or applied by a development build): the schema decides.
//   - The schema decides: keep when the cluster's CRD has a version (in spec.versions or
//     status.storedVersions) or a schema field that embedded lacks; else apply. This is also
//     what guards same-release builds (v1.2.3 after v1.2.3-4-gabcdef) and development builds.
//
// To downgrade the CRDs on purpose, apply the older release's config/crd/bases yourself.
func Keep(current, embedded *apiextensionsv1.CustomResourceDefinition, running string) (bool, string) {
	applied, stamped := current.Annotations[VersionAnnotation]
	appliedRel, appliedIsRel := parseRelease(applied)
	runningRel, runningIsRel := parseRelease(running)
	switch {
	case stamped && appliedIsRel && !runningIsRel:
		return true, fmt.Sprintf("applied by drover %s, a release; %s is a development build", applied, running)
	case stamped && appliedIsRel && runningIsRel:
		switch c := slices.Compare(appliedRel[:], runningRel[:]); {
		case c > 0:
			return true, fmt.Sprintf("applied by drover %s, newer than %s", applied, running)
		case c < 0:
			return false, ""
		}
	}
	if extra := extraSchema(current, embedded); len(extra) > 0 {
		const shown = 5
		more := ""
		if len(extra) > shown {
			more = fmt.Sprintf(" and %d more", len(extra)-shown)
			extra = extra[:shown]
		}
		by := "not stamped with the drover version that applied it"
		if stamped {
			by = "applied by drover " + applied
		}
		return true, fmt.Sprintf("it has %s%s, which drover %s lacks (%s)", strings.Join(extra, ", "), more, running, by)
	}
	return false, ""
}

// parseRelease returns X.Y.Z of a release version vX.Y.Z[-suffix|+build], false for anything
// else, v0.0.0-* included.
func parseRelease(v string) ([3]int, bool) {
	var r [3]int
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return r, false
	}
	if i := strings.IndexAny(rest, "-+"); i >= 0 {
		rest = rest[:i]
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return r, false
	}
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || (len(p) > 1 && p[0] == '0') {
			return r, false
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return r, false
		}
		r[i] = n
	}
	return r, r != [3]int{}
}

// extraSchema lists what current has that embedded lacks: versions (served, or stored in etcd)
// and schema fields, sorted.
func extraSchema(current, embedded *apiextensionsv1.CustomResourceDefinition) []string {
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, v := range embedded.Spec.Versions {
		schemas[v.Name] = nil
		if v.Schema != nil {
			schemas[v.Name] = v.Schema.OpenAPIV3Schema
		}
	}
	extra := map[string]bool{}
	for _, v := range current.Status.StoredVersions {
		if _, ok := schemas[v]; !ok {
			extra["stored version "+v] = true
		}
	}
	for _, v := range current.Spec.Versions {
		mine, ok := schemas[v.Name]
		if !ok {
			extra["version "+v.Name] = true
			continue
		}
		if v.Schema == nil {
			continue
		}
		have, want := map[string]bool{}, map[string]bool{}
		fields(v.Name, v.Schema.OpenAPIV3Schema, have)
		fields(v.Name, mine, want)
		for f := range have {
			if !want[f] {
				extra["field "+f] = true
			}
		}
	}
	out := make([]string, 0, len(extra))
	for e := range extra {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// fields adds the path of every field s declares under prefix: .name for a property, [] for
// the items of a list, {} for the values of a map.
func fields(prefix string, s *apiextensionsv1.JSONSchemaProps, out map[string]bool) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		path := prefix + "." + name
		out[path] = true
		fields(path, &p, out)
	}
	if s.Items != nil {
		fields(prefix+"[]", s.Items.Schema, out)
		for i := range s.Items.JSONSchemas {
			fields(prefix+"[]", &s.Items.JSONSchemas[i], out)
		}
	}
	if s.AdditionalProperties != nil {
		fields(prefix+"{}", s.AdditionalProperties.Schema, out)
	}
	for _, sub := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range sub {
			fields(prefix, &sub[i], out)
		}
	}
}
