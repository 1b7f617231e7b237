package gke

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultVersions are the GKE versions a simulator offers when Options.Versions is empty. They
// follow GKE's "1.MINOR.PATCH-gke.BUILD" shape so version parsing in drover meets real strings.
var DefaultVersions = []string{
	"1.31.13-gke.1023000",
	"1.32.9-gke.1072000",
	"1.33.4-gke.1036000",
	"1.33.5-gke.1162000",
	"1.34.1-gke.1431000",
}

// DefaultVersion is the version clusters get when neither the request nor Options name one.
const DefaultVersion = "1.33.5-gke.1162000"

// version is a parsed GKE version; build is the number after "-gke.".
type version struct{ major, minor, patch, build int }

func parseVersion(s string) (version, bool) {
	var v version
	core, build, hasBuild := strings.Cut(s, "-gke.")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, false
	}
	nums := [3]int{}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		nums[i] = n
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	if hasBuild {
		n, err := strconv.Atoi(build)
		if err != nil || n < 0 {
			return v, false
		}
		v.build = n
	}
	return v, true
}

func (v version) compare(o version) int {
	for _, d := range [...]int{v.major - o.major, v.minor - o.minor, v.patch - o.patch, v.build - o.build} {
		if d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
	}
	return 0
}

// compareVersions compares two version strings; unparsable strings sort first.
func compareVersions(a, b string) int {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	return va.compare(vb)
}

// versionSet resolves the version aliases GKE accepts ("latest", "-", "1.33", "1.33.5",
// a full "1.33.5-gke.1162000") to a concrete offered version.
type versionSet struct {
	all []string // sorted newest first
	def string
}

func newVersionSet(versions []string, def string) (versionSet, error) {
	if len(versions) == 0 {
		versions = DefaultVersions
	}
	all := slices.Clone(versions)
	for _, v := range all {
		if _, ok := parseVersion(v); !ok {
			return versionSet{}, fmt.Errorf("gke: version %q is not of the form 1.MINOR.PATCH-gke.BUILD", v)
		}
	}
	slices.SortFunc(all, func(a, b string) int { return compareVersions(b, a) })
	if def == "" {
		def = DefaultVersion
		if !slices.Contains(all, def) {
			def = all[0]
		}
	}
	if !slices.Contains(all, def) {
		return versionSet{}, fmt.Errorf("gke: default version %q is not among the offered versions %v", def, all)
	}
	return versionSet{all: all, def: def}, nil
}

// resolve returns the offered version an alias stands for. ok is false when none matches.
func (vs versionSet) resolve(alias string) (string, bool) {
	switch alias {
	case "", "-":
		return vs.def, true
	case "latest":
		return vs.all[0], true
	}
	for _, v := range vs.all { // newest first, so a prefix alias picks the newest match
		if v == alias || strings.HasPrefix(v, alias+".") || strings.HasPrefix(v, alias+"-") {
			return v, true
		}
	}
	return "", false
}
