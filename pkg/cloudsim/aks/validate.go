package aks

import (
	"maps"
	"net"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

const (
	modeSystem = "System"
	modeUser   = "User"
)

var (
	linuxPoolName = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)
	winPoolName   = regexp.MustCompile(`^[a-z][a-z0-9]{0,5}$`)
	dnsPrefixRE   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,52}[a-zA-Z0-9])?$`)
	taintRE       = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?=[-A-Za-z0-9_.]*:(NoSchedule|PreferNoSchedule|NoExecute)$`)
)

const maxPoolCount = 1000

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func int32Eq(a, b *int32) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func boolVal(b *bool) bool { return b != nil && *b }

// sameVersionFor reports whether requested, resolved to v, leaves a component at cur: an alias
// of cur's minor never moves a running version to a newer patch, as on AKS.
func sameVersionFor(requested string, v, cur kubeVersion) bool {
	if _, hasPatch, _ := parseVersion(requested); !hasPatch {
		return v.major == cur.major && v.minor == cur.minor
	}
	return v.compare(cur) == 0
}

func validateCIDRs(field string, ranges []string) *apiError {
	for _, r := range ranges {
		if _, _, err := net.ParseCIDR(r); err == nil {
			continue
		}
		if net.ParseIP(r) != nil {
			continue
		}
		return invalidParameter("The value '%s' of parameter %s is invalid. It must be an IP address or a CIDR such as 73.140.245.0/24.", r, field)
	}
	return nil
}

var (
	networkPlugins  = []string{"azure", "kubenet", "none"}
	networkPolicies = []string{"azure", "calico", "cilium", "none"}
	lbSKUs          = []string{"standard", "basic"}
	outboundTypes   = []string{"loadBalancer", "userDefinedRouting", "managedNATGateway", "userAssignedNATGateway", "none"}
)

func oneOf(field, v string, allowed []string) *apiError {
	for _, a := range allowed {
		if strings.EqualFold(a, v) {
			return nil
		}
	}
	return invalidParameter("The value '%s' of parameter %s is invalid. Allowed values: %s.", v, field, strings.Join(allowed, ", "))
}

// defaultNetwork validates a create-time network profile and fills AKS's defaults.
func defaultNetwork(req *networkProfile) (*networkProfile, *apiError) {
	np := networkProfile{}
	if req != nil {
		np = *req
	}
	if np.NetworkPlugin == "" {
		np.NetworkPlugin = "kubenet"
	}
	if e := oneOf("networkProfile.networkPlugin", np.NetworkPlugin, networkPlugins); e != nil {
		return nil, e
	}
	if np.NetworkPolicy != "" {
		if e := oneOf("networkProfile.networkPolicy", np.NetworkPolicy, networkPolicies); e != nil {
			return nil, e
		}
		if np.NetworkPolicy == "azure" && np.NetworkPlugin != "azure" {
			return nil, invalidParameter("Network policy 'azure' requires network plugin 'azure'.")
		}
	}
	if np.LoadBalancerSKU == "" {
		np.LoadBalancerSKU = "standard"
	}
	np.LoadBalancerSKU = strings.ToLower(np.LoadBalancerSKU)
	if e := oneOf("networkProfile.loadBalancerSku", np.LoadBalancerSKU, lbSKUs); e != nil {
		return nil, e
	}
	if np.OutboundType == "" {
		np.OutboundType = "loadBalancer"
	}
	if e := oneOf("networkProfile.outboundType", np.OutboundType, outboundTypes); e != nil {
		return nil, e
	}
	if np.PodCidr == "" && (np.NetworkPlugin == "kubenet" || strings.EqualFold(np.NetworkPluginMode, "overlay")) {
		np.PodCidr = "10.244.0.0/16"
	}
	if np.ServiceCidr == "" {
		np.ServiceCidr = "10.0.0.0/16"
	}
	if np.DNSServiceIP == "" {
		np.DNSServiceIP = "10.0.0.10"
	}
	for field, v := range map[string]string{"networkProfile.podCidr": np.PodCidr, "networkProfile.serviceCidr": np.ServiceCidr} {
		if v == "" {
			continue
		}
		if _, _, err := net.ParseCIDR(v); err != nil {
			return nil, invalidParameter("The value '%s' of parameter %s is not a valid CIDR.", v, field)
		}
	}
	if net.ParseIP(np.DNSServiceIP) == nil {
		return nil, invalidParameter("The value '%s' of parameter networkProfile.dnsServiceIP is not a valid IP address.", np.DNSServiceIP)
	}
	return &np, nil
}

// checkNetworkUnchanged rejects changes to a network profile (immutable after creation here);
// fields left empty in the request keep their value.
func checkNetworkUnchanged(old, req *networkProfile) *apiError {
	if req == nil || old == nil {
		return nil
	}
	fields := []struct{ name, old, req string }{
		{"networkPlugin", old.NetworkPlugin, req.NetworkPlugin},
		{"networkPluginMode", old.NetworkPluginMode, req.NetworkPluginMode},
		{"networkPolicy", old.NetworkPolicy, req.NetworkPolicy},
		{"podCidr", old.PodCidr, req.PodCidr},
		{"serviceCidr", old.ServiceCidr, req.ServiceCidr},
		{"dnsServiceIP", old.DNSServiceIP, req.DNSServiceIP},
		{"loadBalancerSku", old.LoadBalancerSKU, req.LoadBalancerSKU},
		{"outboundType", old.OutboundType, req.OutboundType},
	}
	for _, f := range fields {
		if f.req != "" && !strings.EqualFold(f.req, f.old) {
			return propertyChangeNotAllowed("networkProfile." + f.name)
		}
	}
	return nil
}

// poolInput is what buildPool needs to know about the pool's cluster.
type poolInput struct {
	name        string
	old         *pool  // nil when the pool is created
	defaultMode string // mode of a new pool that does not say
	cp          kubeVersion
	cpVersion   string // the control plane's kubernetesVersion, the default orchestratorVersion
	plugin      string
	pluginMode  string
}

// buildPool validates a pool body and returns the pool to store and the version it will run.
// Like ARM it is a full PUT for mutable fields (an omitted label set clears the labels); fields
// that cannot change keep their value when omitted and are rejected when changed.
func (s *Server) buildPool(in poolInput, req poolProperties) (poolProperties, kubeVersion, *apiError) {
	var pp poolProperties
	old := in.old
	if old == nil {
		pp.OSType = req.OSType
		if pp.OSType == "" {
			pp.OSType = "Linux"
		}
		if e := oneOf("osType", pp.OSType, []string{"Linux", "Windows"}); e != nil {
			return pp, kubeVersion{}, e
		}
		nameRE, limit := linuxPoolName, 12
		if strings.EqualFold(pp.OSType, "Windows") {
			nameRE, limit = winPoolName, 6
		}
		if !nameRE.MatchString(in.name) {
			return pp, kubeVersion{}, invalidParameter("The agent pool name '%s' is invalid. Agent pool names must start with a lowercase letter, contain only lowercase letters and numbers, and be at most %d characters long for %s pools. See https://aka.ms/aks-naming-rules for more details.", in.name, limit, pp.OSType)
		}
		pp.VMSize = req.VMSize
		if pp.VMSize == "" {
			pp.VMSize = "Standard_DS2_v2"
		}
		pp.OSDiskSizeGB = clonePtr(req.OSDiskSizeGB)
		if pp.OSDiskSizeGB == nil {
			pp.OSDiskSizeGB = ptr(int32(128))
		}
		pp.OSDiskType = req.OSDiskType
		if pp.OSDiskType == "" {
			pp.OSDiskType = "Managed"
		}
		pp.OSSKU = req.OSSKU
		if pp.OSSKU == "" && pp.OSType == "Linux" {
			pp.OSSKU = "Ubuntu"
		}
		pp.Type = req.Type
		if pp.Type == "" {
			pp.Type = "VirtualMachineScaleSets"
		}
		pp.AvailabilityZones = slices.Clone(req.AvailabilityZones)
		pp.VnetSubnetID = req.VnetSubnetID
		pp.MaxPods = clonePtr(req.MaxPods)
		if pp.MaxPods == nil {
			switch {
			case in.plugin == "azure" && !strings.EqualFold(in.pluginMode, "overlay"):
				pp.MaxPods = ptr(int32(30))
			case in.plugin == "azure":
				pp.MaxPods = ptr(int32(250))
			default:
				pp.MaxPods = ptr(int32(110))
			}
		}
		pp.Mode = req.Mode
		if pp.Mode == "" {
			pp.Mode = in.defaultMode
		}
		pp.UpgradeSettings = clonePtr(req.UpgradeSettings)
		if pp.UpgradeSettings == nil {
			pp.UpgradeSettings = &upgradeSettings{MaxSurge: "10%"}
		}
		pp.Count = clonePtr(req.Count)
		if pp.Count == nil {
			pp.Count = ptr(int32(1))
			if boolVal(req.EnableAutoScaling) && req.MinCount != nil {
				pp.Count = ptr(*req.MinCount)
			}
		}
	} else {
		pp = old.props
		immutable := []struct {
			name     string
			old, req string
		}{
			{"vmSize", pp.VMSize, req.VMSize},
			{"osType", pp.OSType, req.OSType},
			{"osDiskType", pp.OSDiskType, req.OSDiskType},
			{"osSKU", pp.OSSKU, req.OSSKU},
			{"type", pp.Type, req.Type},
			{"vnetSubnetID", pp.VnetSubnetID, req.VnetSubnetID},
		}
		for _, f := range immutable {
			if f.req != "" && !strings.EqualFold(f.req, f.old) {
				return pp, kubeVersion{}, propertyChangeNotAllowed(f.name)
			}
		}
		if req.OSDiskSizeGB != nil && !int32Eq(req.OSDiskSizeGB, pp.OSDiskSizeGB) {
			return pp, kubeVersion{}, propertyChangeNotAllowed("osDiskSizeGB")
		}
		if req.MaxPods != nil && !int32Eq(req.MaxPods, pp.MaxPods) {
			return pp, kubeVersion{}, propertyChangeNotAllowed("maxPods")
		}
		if req.AvailabilityZones != nil && !slices.Equal(req.AvailabilityZones, pp.AvailabilityZones) {
			return pp, kubeVersion{}, propertyChangeNotAllowed("availabilityZones")
		}
		if req.Count != nil {
			pp.Count = ptr(*req.Count)
		}
		if req.Mode != "" {
			pp.Mode = req.Mode
		}
		if req.UpgradeSettings != nil {
			pp.UpgradeSettings = clonePtr(req.UpgradeSettings)
		}
	}
	if e := oneOf("mode", pp.Mode, []string{modeSystem, modeUser}); e != nil {
		return pp, kubeVersion{}, e
	}
	// Canonical case, so comparisons (last System pool) need not care.
	if strings.EqualFold(pp.Mode, modeSystem) {
		pp.Mode = modeSystem
	} else {
		pp.Mode = modeUser
	}
	if pp.Mode == modeSystem && strings.EqualFold(pp.OSType, "Windows") {
		return pp, kubeVersion{}, invalidParameter("Agent pool '%s': Windows agent pools cannot be System mode pools.", in.name)
	}

	// Mutable fields: replaced by the request, as a PUT does.
	pp.EnableAutoScaling = ptr(boolVal(req.EnableAutoScaling))
	pp.MinCount, pp.MaxCount = clonePtr(req.MinCount), clonePtr(req.MaxCount)
	pp.NodeLabels = maps.Clone(req.NodeLabels)
	pp.NodeTaints = slices.Clone(req.NodeTaints)
	pp.Tags = maps.Clone(req.Tags)
	for _, t := range pp.NodeTaints {
		if !taintRE.MatchString(t) {
			return pp, kubeVersion{}, invalidParameter("Agent pool '%s': node taint '%s' is invalid; taints have the form key=value:NoSchedule|PreferNoSchedule|NoExecute.", in.name, t)
		}
	}
	if e := checkCounts(in.name, &pp, req.Count != nil); e != nil {
		return pp, kubeVersion{}, e
	}

	// Version.
	var target kubeVersion
	switch {
	case req.OrchestratorVersion == "" && old == nil:
		pp.OrchestratorVersion, target = in.cpVersion, in.cp
	case req.OrchestratorVersion == "":
		target = old.cur
	default:
		v, e := s.versions.resolve(req.OrchestratorVersion)
		if e != nil {
			return pp, kubeVersion{}, e
		}
		target = v
		if old != nil {
			if sameVersionFor(req.OrchestratorVersion, v, old.cur) {
				target = old.cur
			} else if v.compare(old.cur) < 0 {
				return pp, kubeVersion{}, badRequest("OperationNotAllowed", "Downgrading Kubernetes version %s to %s of agent pool '%s' is not allowed. Please see https://aka.ms/aks-supported-k8s-ver for version details.", old.cur, v, in.name)
			}
		}
		pp.OrchestratorVersion = req.OrchestratorVersion
	}
	if e := checkPoolVersion(in.name, target, in.cp); e != nil {
		return pp, kubeVersion{}, e
	}
	return pp, target, nil
}

// checkCounts validates count against autoscaling bounds and the pool's mode. When autoscaling
// is on and no count was sent, count is clamped into [minCount, maxCount] like the autoscaler.
func checkCounts(name string, pp *poolProperties, countSent bool) *apiError {
	minNodes := int32(0)
	if pp.Mode == modeSystem {
		minNodes = 1
	}
	if boolVal(pp.EnableAutoScaling) {
		if pp.MinCount == nil || pp.MaxCount == nil {
			return invalidParameter("Agent pool '%s': minCount and maxCount must be specified when enableAutoScaling is true.", name)
		}
		lo, hi := *pp.MinCount, *pp.MaxCount
		if lo < minNodes || hi > maxPoolCount {
			return invalidParameter("Agent pool '%s': minCount %d and maxCount %d must be within [%d, %d] for a %s pool.", name, lo, hi, minNodes, maxPoolCount, pp.Mode)
		}
		if lo > hi {
			return invalidParameter("Agent pool '%s': minCount %d must be less than or equal to maxCount %d.", name, lo, hi)
		}
		c := *pp.Count
		if c < lo || c > hi {
			if countSent {
				return invalidParameter("Agent pool '%s': count %d must be between minCount %d and maxCount %d when enableAutoScaling is true.", name, c, lo, hi)
			}
			pp.Count = ptr(min(max(c, lo), hi))
		}
		return nil
	}
	if pp.MinCount != nil || pp.MaxCount != nil {
		return invalidParameter("Agent pool '%s': minCount and maxCount must be null when enableAutoScaling is false.", name)
	}
	if c := *pp.Count; c < minNodes || c > maxPoolCount {
		return invalidParameter("Agent pool '%s': count %d must be within [%d, %d] for a %s pool.", name, c, minNodes, maxPoolCount, pp.Mode)
	}
	return nil
}

// poolChange classifies how a pool changes, as the state AKS shows during the operation, or ""
// for no change.
func poolChange(old *pool, pp poolProperties, target kubeVersion) string {
	switch {
	case old == nil:
		return stateCreating
	case target.compare(old.cur) != 0:
		return stateUpgrading
	case reflect.DeepEqual(old.props, pp):
		return ""
	}
	a, b := old.props, pp
	a.Count, b.Count = nil, nil
	if reflect.DeepEqual(a, b) {
		return stateScaling
	}
	return stateUpdating
}
