package eks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SupportedVersions are the Kubernetes versions the simulator accepts, oldest first.
var SupportedVersions = []string{"1.29", "1.30", "1.31", "1.32", "1.33", "1.34"}

// DefaultVersion is the version of a cluster created without one, as EKS picks its current default.
const DefaultVersion = "1.33"

// platformVersion is reported for every cluster; EKS bumps it per version, drover only displays it.
const platformVersion = "eks.1"

// amiRelease is the date part of the AMI release versions the simulator reports for node groups.
const amiRelease = "20250715"

// minor returns the minor number of a supported "1.N" version.
func minor(v string) (int, bool) {
	if !slices.Contains(SupportedVersions, v) {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(v, "1."))
	return n, err == nil
}

// checkVersion returns an InvalidParameterException unless v is a supported version.
func checkVersion(v string) error {
	if _, ok := minor(v); !ok {
		return invalidParam("unsupported Kubernetes version %s (supported: %s)", v, strings.Join(SupportedVersions, ", "))
	}
	return nil
}

// checkUpgrade enforces EKS's rule that a control plane moves exactly one minor version forward.
func checkUpgrade(from, to string) error {
	if err := checkVersion(to); err != nil {
		return err
	}
	f, _ := minor(from)
	t, _ := minor(to)
	switch {
	case t == f:
		return invalidParam("no changes: cluster is already at version %s", to)
	case t != f+1:
		return invalidParam("Unsupported Kubernetes minor version update from %s to %s", from, to)
	}
	return nil
}

// defaultRelease is the AMI release version EKS would pick for a node group at version v.
func defaultRelease(v string) string { return fmt.Sprintf("%s.0-%s", v, amiRelease) }
