package gke

import (
	"net/netip"
	"regexp"
	"strings"

	container "google.golang.org/api/container/v1"
)

var (
	resourceNameRE = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$`)
	locationRE     = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+(?:-[a-z])?$`)
	labelKeyRE     = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValueRE   = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

const maxAuthorizedNetworks = 50

func validateName(field, name string) *apiError {
	if name == "" {
		return invalidArgument("%s must be specified.", field)
	}
	if !resourceNameRE.MatchString(name) {
		return invalidArgument("Invalid value for field %q: %q. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)' "+
			"(only alphanumerics and '-' allowed, must start with a letter and end with an alphanumeric, and must be no longer than 40 characters).", field, name)
	}
	return nil
}

func validateLocation(location string) *apiError {
	if !locationRE.MatchString(location) {
		return invalidArgument("Location %q is not a valid GCP region or zone.", location)
	}
	return nil
}

// validateLocations checks a cluster's node locations: zones of its region, including its own
// zone for a zonal cluster.
func validateLocations(field, location string, locations []string) *apiError {
	if len(locations) == 0 {
		return invalidArgument("%s must not be empty.", field)
	}
	region := regionOf(location)
	seen := map[string]bool{}
	for _, l := range locations {
		if !isZone(l) || regionOf(l) != region || !locationRE.MatchString(l) {
			return invalidArgument("Invalid value for field %q: %q is not a zone of region %q.", field, l, region)
		}
		if seen[l] {
			return invalidArgument("Invalid value for field %q: duplicate zone %q.", field, l)
		}
		seen[l] = true
	}
	if isZone(location) && !seen[location] {
		return invalidArgument("Invalid value for field %q: the locations of a zonal cluster must include its zone %q.", field, location)
	}
	return nil
}

func validateLabels(field string, labels map[string]string) *apiError {
	if len(labels) > 64 {
		return invalidArgument("Invalid value for field %q: at most 64 labels are allowed.", field)
	}
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) {
			return invalidArgument("Invalid value for field %q: label key %q must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-' (at most 63 characters).", field, k)
		}
		if !labelValueRE.MatchString(v) {
			return invalidArgument("Invalid value for field %q: label value %q may contain only lowercase letters, digits, '_' and '-' (at most 63 characters).", field, v)
		}
	}
	return nil
}

var (
	loggingServices    = map[string]bool{"logging.googleapis.com/kubernetes": true, "none": true}
	monitoringServices = map[string]bool{"monitoring.googleapis.com/kubernetes": true, "none": true}
)

func validateService(field, value string, allowed map[string]bool) *apiError {
	if !allowed[value] {
		if strings.HasSuffix(value, ".googleapis.com") {
			return invalidArgument("Invalid value for field %q: %q. Legacy Logging and Monitoring is no longer supported; use %q or \"none\".", field, value, value+"/kubernetes")
		}
		return invalidArgument("Invalid value for field %q: %q.", field, value)
	}
	return nil
}

func validateAuthorizedNetworks(field string, cfg *container.MasterAuthorizedNetworksConfig) *apiError {
	if cfg == nil {
		return nil
	}
	if len(cfg.CidrBlocks) > maxAuthorizedNetworks {
		return invalidArgument("Invalid value for field %q: at most %d CIDR blocks are allowed, got %d.", field, maxAuthorizedNetworks, len(cfg.CidrBlocks))
	}
	for _, b := range cfg.CidrBlocks {
		if b == nil {
			return invalidArgument("Invalid value for field %q: empty CIDR block.", field)
		}
		p, err := netip.ParsePrefix(b.CidrBlock)
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			return invalidArgument("Invalid value for field %q: %q is not a valid IPv4 CIDR block.", field, b.CidrBlock)
		}
	}
	return nil
}

func validateAutoscaling(field string, a *container.NodePoolAutoscaling) *apiError {
	if a == nil || !a.Enabled {
		return nil
	}
	if a.MinNodeCount < 0 || a.MaxNodeCount < 0 {
		return invalidArgument("Invalid value for field %q: node counts must not be negative.", field)
	}
	if a.MaxNodeCount == 0 && a.TotalMaxNodeCount == 0 {
		return invalidArgument("Invalid value for field %q: max_node_count must be greater than 0.", field)
	}
	if a.MinNodeCount > a.MaxNodeCount && a.TotalMaxNodeCount == 0 {
		return invalidArgument("Invalid value for field %q: min_node_count (%d) must be less than or equal to max_node_count (%d).", field, a.MinNodeCount, a.MaxNodeCount)
	}
	return nil
}

// resolveMasterVersion checks a requested master version against the current one: GKE refuses
// downgrades across minor versions and upgrades that skip a minor version.
func (s *Server) resolveMasterVersion(alias, current string) (string, *apiError) {
	v, ok := s.versions.resolve(alias)
	if !ok {
		return "", invalidArgument("Master version %q is unsupported.", alias)
	}
	if current == "" {
		return v, nil
	}
	nv, _ := parseVersion(v)
	cv, _ := parseVersion(current)
	switch {
	case nv.major == cv.major && nv.minor < cv.minor:
		return "", invalidArgument("Master version %q cannot be downgraded to %q: downgrades are only supported between patch versions of the same minor version.", current, v)
	case nv.major == cv.major && nv.minor > cv.minor+1:
		return "", invalidArgument("Master version %q cannot be upgraded to %q: the control plane can only be upgraded one minor version at a time.", current, v)
	}
	return v, nil
}

// resolveNodeVersion resolves a node version; "-" and "" mean the master's version. Nodes may
// not be newer than the control plane.
func (s *Server) resolveNodeVersion(alias, master string) (string, *apiError) {
	if alias == "" || alias == "-" {
		return master, nil
	}
	v, ok := s.versions.resolve(alias)
	if !ok {
		return "", invalidArgument("Node version %q is unsupported.", alias)
	}
	if compareVersions(v, master) > 0 {
		return "", invalidArgument("desired node version %q cannot be greater than current master version %q.", v, master)
	}
	return v, nil
}
