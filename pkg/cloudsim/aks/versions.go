package aks

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultKubernetesVersions is the version list offered when Options.KubernetesVersions is
// empty: a few patches of five minors, so tests can upgrade, skip a minor and downgrade.
var DefaultKubernetesVersions = []string{
	"1.29.13", "1.29.14",
	"1.30.10", "1.30.11",
	"1.31.6", "1.31.7",
	"1.32.2", "1.32.3",
	"1.33.0", "1.33.1",
}

type kubeVersion struct{ major, minor, patch int }

func (v kubeVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

func (v kubeVersion) compare(o kubeVersion) int {
	if c := cmp.Compare(v.major, o.major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.minor, o.minor); c != 0 {
		return c
	}
	return cmp.Compare(v.patch, o.patch)
}

// parseVersion parses "1.31" (an alias: hasPatch false) or "1.31.7".
func parseVersion(s string) (v kubeVersion, hasPatch bool, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, false, false
	}
	n := make([]int, len(parts))
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return v, false, false
		}
		n[i] = x
	}
	v.major, v.minor = n[0], n[1]
	if len(n) == 3 {
		v.patch = n[2]
		return v, true, true
	}
	return v, false, true
}

// versionSet is the sorted list of Kubernetes versions the simulated region offers.
type versionSet []kubeVersion

func newVersionSet(list []string) (versionSet, error) {
	if len(list) == 0 {
		list = DefaultKubernetesVersions
	}
	vs := make(versionSet, 0, len(list))
	for _, s := range list {
		v, hasPatch, ok := parseVersion(s)
		if !ok || !hasPatch {
			return nil, fmt.Errorf("aks simulator: Kubernetes version %q is not major.minor.patch", s)
		}
		vs = append(vs, v)
	}
	slices.SortFunc(vs, kubeVersion.compare)
	return slices.CompactFunc(vs, func(a, b kubeVersion) bool { return a.compare(b) == 0 }), nil
}

// resolve turns a requested version ("1.31" or "1.31.7") into the version that runs: an alias
// picks the newest patch of that minor, as AKS does.
func (vs versionSet) resolve(s string) (kubeVersion, *apiError) {
	v, hasPatch, ok := parseVersion(s)
	if !ok {
		return v, badRequest("K8sVersionNotSupported", "Version %s is not supported in this region. Please use [az aks get-versions] command to get the supported version list in this region. For more information, please check https://aka.ms/supported-version-list", s)
	}
	if !hasPatch {
		var best kubeVersion
		found := false
		for _, c := range vs {
			if c.major == v.major && c.minor == v.minor {
				best, found = c, true
			}
		}
		if !found {
			return v, badRequest("UnsupportedAliasMinorVersion", "%s is not a supported Kubernetes version. To see our supported AKS version list please visit https://aka.ms/supported-version-list for more details.", s)
		}
		return best, nil
	}
	for _, c := range vs {
		if c.compare(v) == 0 {
			return v, nil
		}
	}
	return v, badRequest("K8sVersionNotSupported", "Version %s is not supported in this region. Please use [az aks get-versions] command to get the supported version list in this region. For more information, please check https://aka.ms/supported-version-list", s)
}

// defaultVersion is what a cluster created without kubernetesVersion gets: the newest patch of
// the second newest minor, like the AKS default.
func (vs versionSet) defaultVersion() kubeVersion {
	newest := vs[len(vs)-1]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].minor != newest.minor || vs[i].major != newest.major {
			return vs[i]
		}
	}
	return newest
}

// upgrades lists the versions a control plane at cur may move to (no minor skipping).
func (vs versionSet) upgrades(cur kubeVersion) []string {
	var out []string
	for i := len(vs) - 1; i >= 0; i-- {
		c := vs[i]
		if c.compare(cur) > 0 && c.major == cur.major && c.minor <= cur.minor+1 {
			out = append(out, c.String())
		}
	}
	return out
}

// checkUpgrade validates moving a control plane from cur to next with AKS's rules: no
// downgrade, no skipping a minor.
func (vs versionSet) checkUpgrade(cur, next kubeVersion) *apiError {
	switch {
	case next.compare(cur) < 0:
		return badRequest("OperationNotAllowed", "Downgrading Kubernetes version %s to %s is not allowed. Available upgrades: [%s]. Please see https://aka.ms/aks-supported-k8s-ver for version details.", cur, next, strings.Join(vs.upgrades(cur), " "))
	case next.major != cur.major || next.minor > cur.minor+1:
		return badRequest("OperationNotAllowed", "Upgrading Kubernetes version %s to %s is not allowed. Available upgrades: [%s]. Please see https://aka.ms/aks-supported-k8s-ver for version details.", cur, next, strings.Join(vs.upgrades(cur), " "))
	}
	return nil
}

// checkPoolVersion validates a node pool version against its control plane: never newer, at
// most three minors older.
func checkPoolVersion(pool string, pv, cp kubeVersion) *apiError {
	if pv.compare(cp) > 0 || pv.major != cp.major || pv.minor+3 < cp.minor {
		return badRequest("NodePoolMcVersionIncompatible", "Node pool %q version %s and control plane version %s are incompatible. A node pool may not be newer than the control plane nor more than 3 minor versions older. For more information, please check https://aka.ms/aks/UpgradeVersionRules", pool, pv, cp)
	}
	return nil
}
