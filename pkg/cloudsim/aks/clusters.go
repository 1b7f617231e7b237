package aks

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

const maxBody = 4 << 20

func decodeBody(r *http.Request, v any) *apiError {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return badRequest("InvalidRequestContent", "The request content could not be read: %v", err)
	}
	if len(b) > maxBody {
		return errorf(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "The request content is larger than %d bytes.", maxBody)
	}
	if len(b) == 0 {
		return badRequest("InvalidRequestContent", "The request content was invalid and could not be deserialized: 'The request body is empty.'")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return badRequest("InvalidRequestContent", "The request content was invalid and could not be deserialized: 'Error converting value at path '%s' to type '%s'.'", ute.Field, ute.Type)
		}
		return badRequest("InvalidRequestContent", "The request content was invalid and could not be deserialized: '%v'", err)
	}
	return nil
}

func notFound(rt *route) *apiError {
	return errorf(http.StatusNotFound, "ResourceNotFound",
		"The Resource 'Microsoft.ContainerService/managedClusters/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", rt.name, rt.rg)
}

// respondLocked marshals v while s.mu is held (rendered values share the stored maps), then releases
// the lock before writing to the network.
func (s *Server) respondLocked(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	s.mu.Unlock()
	if err != nil {
		http.Error(w, "aks simulator: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, status, b)
}

// errorLocked releases s.mu and writes e.
func (s *Server) errorLocked(w http.ResponseWriter, e *apiError) {
	s.mu.Unlock()
	writeError(w, e)
}

// setAsyncHeaders points the SDK's poller at op: Azure-AsyncOperation always, Location too for
// deletes (ARM sends both; azcore prefers Azure-AsyncOperation).
func (s *Server) setAsyncHeaders(w http.ResponseWriter, r *http.Request, rt *route, op *operation, withLocation bool) {
	base := "https://" + r.Host + "/subscriptions/" + rt.sub + "/providers/Microsoft.ContainerService/locations/" + op.location
	q := "?api-version=" + url.QueryEscape(rt.apiVersion)
	h := w.Header()
	h.Set("Azure-AsyncOperation", base+"/operations/"+op.id+q)
	if withLocation {
		h.Set("Location", base+"/operationresults/"+op.id+q)
	}
	setRetryAfter(h, s.opts.PollRetryAfter)
}

func (s *Server) handleGetCluster(w http.ResponseWriter, rt *route) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, notFound(rt))
		return
	}
	s.respondLocked(w, http.StatusOK, c.render())
}

func (s *Server) handlePutCluster(w http.ResponseWriter, r *http.Request, rt *route, tok *accessToken) {
	var req managedCluster
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	now := s.now()
	s.mu.Lock()
	key := rt.key()
	c := s.lookup(key, now)
	status := http.StatusOK
	var op *operation
	var e *apiError
	if c == nil {
		e = checkPrecondition(r, "managed cluster", rt.name, "", false)
	} else {
		e = checkPrecondition(r, "managed cluster", rt.name, c.etag, true)
	}
	switch {
	case e != nil:
	case c == nil:
		status = http.StatusCreated
		c, op, e = s.createCluster(rt, &req, tok, now)
		if e == nil {
			c.backend = s.opts.Backend
			s.insert(key, c)
		}
	default:
		op, e = s.updateCluster(c, &req, now)
	}
	if e != nil {
		s.errorLocked(w, e)
		return
	}
	c.touch()
	s.setAsyncHeaders(w, r, rt, op, false)
	s.respondLocked(w, status, c.render())
}

// createCluster validates a new cluster, fills AKS's defaults and starts its creation.
func (s *Server) createCluster(rt *route, req *managedCluster, tok *accessToken, now time.Time) (*cluster, *operation, *apiError) {
	if strings.TrimSpace(req.Location) == "" {
		return nil, nil, badRequest("LocationRequired", "The location property is required for this definition.")
	}
	var in clusterProperties
	if req.Properties != nil {
		in = *req.Properties
	}
	if in.DNSPrefix == "" && in.FQDNSubdomain == "" {
		return nil, nil, invalidParameter("Required parameter dnsPrefix is missing (null).")
	}
	if in.DNSPrefix != "" && !dnsPrefixRE.MatchString(in.DNSPrefix) {
		return nil, nil, invalidParameter("DNS prefix '%s' is invalid. The DNS prefix must contain between 1 and 54 characters. The name can contain only letters, numbers, and hyphens. The name must start and end with a letter or a number.", in.DNSPrefix)
	}
	target := s.versions.defaultVersion()
	props := clusterProperties{
		DNSPrefix:            in.DNSPrefix,
		FQDNSubdomain:        in.FQDNSubdomain,
		KubernetesVersion:    in.KubernetesVersion,
		NodeResourceGroup:    in.NodeResourceGroup,
		EnableRBAC:           clonePtr(in.EnableRBAC),
		DisableLocalAccounts: clonePtr(in.DisableLocalAccounts),
		SupportPlan:          in.SupportPlan,
		LinuxProfile:         cloneLinux(in.LinuxProfile),
		AddonProfiles:        cloneAddons(in.AddonProfiles),
		MaxAgentPools:        100,
	}
	if props.KubernetesVersion == "" {
		props.KubernetesVersion = target.String()
	} else {
		v, e := s.versions.resolve(props.KubernetesVersion)
		if e != nil {
			return nil, nil, e
		}
		target = v
	}
	np, e := defaultNetwork(in.NetworkProfile)
	if e != nil {
		return nil, nil, e
	}
	props.NetworkProfile = np
	if ap := in.APIServerAccessProfile; ap != nil {
		if e := validateCIDRs("apiServerAccessProfile.authorizedIPRanges", ap.AuthorizedIPRanges); e != nil {
			return nil, nil, e
		}
		props.APIServerAccessProfile = &apiServerAccessProfile{AuthorizedIPRanges: slices.Clone(ap.AuthorizedIPRanges), EnablePrivateCluster: clonePtr(ap.EnablePrivateCluster)}
	}
	if props.EnableRBAC == nil {
		props.EnableRBAC = ptr(true)
	}
	if props.SupportPlan == "" {
		props.SupportPlan = "KubernetesOfficial"
	}
	loc := strings.ToLower(strings.ReplaceAll(req.Location, " ", ""))
	if props.NodeResourceGroup == "" {
		props.NodeResourceGroup = "MC_" + rt.rg + "_" + rt.name + "_" + loc
	}
	prefix := props.DNSPrefix
	if prefix == "" {
		prefix = props.FQDNSubdomain
	}
	hash := fnv.New32a()
	_, _ = hash.Write([]byte(rt.key()))
	host := fmt.Sprintf("%s-%08x", strings.ToLower(prefix), hash.Sum32())
	props.FQDN = host + ".hcp." + loc + ".azmk8s.io"
	if ap := props.APIServerAccessProfile; ap != nil && boolVal(ap.EnablePrivateCluster) {
		props.PrivateFQDN = host + ".privatelink." + loc + ".azmk8s.io"
	}

	if len(in.AgentPoolProfiles) == 0 {
		return nil, nil, badRequest("MustDefineAtLeastOneSystemPool", "Must define at least one system pool.")
	}
	c := &cluster{sub: rt.sub, rg: rt.rg, cur: target, target: target}
	seen := make(map[string]bool, len(in.AgentPoolProfiles))
	for _, rp := range in.AgentPoolProfiles {
		if seen[strings.ToLower(rp.Name)] {
			return nil, nil, invalidParameter("Agent pool name '%s' is used more than once in agentPoolProfiles.", rp.Name)
		}
		seen[strings.ToLower(rp.Name)] = true
		pp, pv, e := s.buildPool(poolInput{name: rp.Name, defaultMode: modeSystem, cp: target, cpVersion: props.KubernetesVersion,
			plugin: np.NetworkPlugin, pluginMode: np.NetworkPluginMode}, rp.poolProperties)
		if e != nil {
			return nil, nil, e
		}
		c.pools = append(c.pools, &pool{name: rp.Name, props: pp, cur: pv, target: pv})
	}
	if c.systemPools(nil) == 0 {
		return nil, nil, badRequest("MustDefineAtLeastOneSystemPool", "Must define at least one system pool.")
	}

	identity, sp := identityFor(req.Identity, in.ServicePrincipalProfile, nil, rt.key(), tok.tenant)
	props.ServicePrincipalProfile = sp
	sku := clonePtr(req.SKU)
	if sku == nil {
		sku = &clusterSKU{Name: "Base", Tier: "Free"}
	}
	c.mc = managedCluster{
		Name:       rt.name,
		Location:   req.Location,
		Tags:       maps.Clone(req.Tags),
		SKU:        sku,
		Identity:   identity,
		Properties: &props,
	}
	op := s.startClusterOp(c, stateCreating, now)
	for _, p := range c.pools {
		startPoolOp(p, stateCreating, op)
	}
	return c, op, nil
}

// identityFor resolves the identity and service principal of a PUT. A cluster with neither
// gets a system-assigned identity; with an identity, servicePrincipalProfile.clientId is "msi".
// The secret is never stored.
func identityFor(req *clusterIdentity, sp *servicePrincipalProfile, old *managedCluster, key, tenant string) (*clusterIdentity, *servicePrincipalProfile) {
	if req == nil && old != nil {
		if sp != nil && sp.ClientID != "" && old.Identity == nil {
			return nil, &servicePrincipalProfile{ClientID: sp.ClientID}
		}
		return old.Identity, old.Properties.ServicePrincipalProfile
	}
	if req == nil && sp != nil && sp.ClientID != "" && sp.ClientID != "msi" {
		return nil, &servicePrincipalProfile{ClientID: sp.ClientID}
	}
	id := &clusterIdentity{Type: "SystemAssigned"}
	if req != nil && req.Type != "" {
		id.Type = req.Type
	}
	if strings.EqualFold(id.Type, "SystemAssigned") {
		id.PrincipalID = uuidFrom("principal/" + key)
		id.TenantID = tenant
	}
	if req != nil && len(req.UserAssignedIdentities) > 0 {
		id.UserAssignedIdentities = make(map[string]*userAssignedIdentity, len(req.UserAssignedIdentities))
		for k := range req.UserAssignedIdentities {
			id.UserAssignedIdentities[k] = &userAssignedIdentity{ClientID: uuidFrom("client/" + k), PrincipalID: uuidFrom("principal/" + k)}
		}
	}
	return id, &servicePrincipalProfile{ClientID: "msi"}
}

func cloneLinux(l *linuxProfile) *linuxProfile {
	if l == nil {
		return nil
	}
	out := &linuxProfile{AdminUsername: l.AdminUsername}
	if l.SSH != nil {
		out.SSH = &sshConfiguration{PublicKeys: slices.Clone(l.SSH.PublicKeys)}
	}
	return out
}

func cloneAddons(a map[string]*addonProfile) map[string]*addonProfile {
	if a == nil {
		return nil
	}
	out := make(map[string]*addonProfile, len(a))
	for k, v := range a {
		if v != nil {
			out[k] = &addonProfile{Enabled: v.Enabled, Config: maps.Clone(v.Config)}
		}
	}
	return out
}

// updateCluster applies a PUT to an existing cluster. Tags and listed pools are replaced as by
// any ARM PUT; profiles the request omits keep their value; properties AKS cannot change are
// rejected when they differ. Pools missing from agentPoolProfiles are kept (the agentPools API
// deletes pools), as on AKS.
func (s *Server) updateCluster(c *cluster, req *managedCluster, now time.Time) (*operation, *apiError) {
	if isBusy(c.state) {
		return nil, c.conflict()
	}
	if bp := c.busyPool(); bp != nil {
		return nil, bp.conflict()
	}
	if req.Location != "" && strings.ToLower(strings.ReplaceAll(req.Location, " ", "")) != c.location() {
		return nil, propertyChangeNotAllowed("location")
	}
	var in clusterProperties
	if req.Properties != nil {
		in = *req.Properties
	}
	old := c.mc.Properties
	props := *old
	for _, f := range []struct{ name, old, req string }{
		{"dnsPrefix", old.DNSPrefix, in.DNSPrefix},
		{"fqdnSubdomain", old.FQDNSubdomain, in.FQDNSubdomain},
		{"nodeResourceGroup", old.NodeResourceGroup, in.NodeResourceGroup},
	} {
		if f.req != "" && !strings.EqualFold(f.req, f.old) {
			return nil, propertyChangeNotAllowed(f.name)
		}
	}
	if in.EnableRBAC != nil && *in.EnableRBAC != boolVal(old.EnableRBAC) {
		return nil, propertyChangeNotAllowed("enableRBAC")
	}
	if e := checkNetworkUnchanged(old.NetworkProfile, in.NetworkProfile); e != nil {
		return nil, e
	}
	if ap := in.APIServerAccessProfile; ap != nil {
		if e := validateCIDRs("apiServerAccessProfile.authorizedIPRanges", ap.AuthorizedIPRanges); e != nil {
			return nil, e
		}
		wasPrivate := old.APIServerAccessProfile != nil && boolVal(old.APIServerAccessProfile.EnablePrivateCluster)
		if ap.EnablePrivateCluster != nil && *ap.EnablePrivateCluster != wasPrivate {
			return nil, propertyChangeNotAllowed("apiServerAccessProfile.enablePrivateCluster")
		}
		nap := &apiServerAccessProfile{AuthorizedIPRanges: slices.Clone(ap.AuthorizedIPRanges)}
		if old.APIServerAccessProfile != nil {
			nap.EnablePrivateCluster = old.APIServerAccessProfile.EnablePrivateCluster
		} else {
			nap.EnablePrivateCluster = clonePtr(ap.EnablePrivateCluster)
		}
		props.APIServerAccessProfile = nap
	}
	if lp := in.LinuxProfile; lp != nil {
		if old.LinuxProfile != nil && lp.AdminUsername != "" && lp.AdminUsername != old.LinuxProfile.AdminUsername {
			return nil, propertyChangeNotAllowed("linuxProfile.adminUsername")
		}
		props.LinuxProfile = cloneLinux(lp)
		if props.LinuxProfile.AdminUsername == "" && old.LinuxProfile != nil {
			props.LinuxProfile.AdminUsername = old.LinuxProfile.AdminUsername
		}
	}
	if in.AddonProfiles != nil {
		props.AddonProfiles = cloneAddons(in.AddonProfiles)
	}
	if in.DisableLocalAccounts != nil {
		props.DisableLocalAccounts = clonePtr(in.DisableLocalAccounts)
	}
	if in.SupportPlan != "" {
		props.SupportPlan = in.SupportPlan
	}

	target := c.cur
	if in.KubernetesVersion != "" {
		v, e := s.versions.resolve(in.KubernetesVersion)
		if e != nil {
			return nil, e
		}
		if !sameVersionFor(in.KubernetesVersion, v, c.cur) {
			if e := s.versions.checkUpgrade(c.cur, v); e != nil {
				return nil, e
			}
			target = v
		}
		props.KubernetesVersion = in.KubernetesVersion
	}

	type change struct {
		p      *pool
		pp     poolProperties
		target kubeVersion
		state  string
	}
	var changes []change
	seen := make(map[string]bool, len(in.AgentPoolProfiles))
	for _, rp := range in.AgentPoolProfiles {
		if seen[strings.ToLower(rp.Name)] {
			return nil, invalidParameter("Agent pool name '%s' is used more than once in agentPoolProfiles.", rp.Name)
		}
		seen[strings.ToLower(rp.Name)] = true
		existing := c.pool(rp.Name)
		pp, pv, e := s.buildPool(poolInput{name: rp.Name, old: existing, defaultMode: modeUser, cp: target, cpVersion: props.KubernetesVersion,
			plugin: props.NetworkProfile.NetworkPlugin, pluginMode: props.NetworkProfile.NetworkPluginMode}, rp.poolProperties)
		if e != nil {
			return nil, e
		}
		ch := change{p: existing, pp: pp, target: pv, state: poolChange(existing, pp, pv)}
		if existing == nil {
			ch.p = &pool{name: rp.Name}
		}
		changes = append(changes, ch)
	}
	// Checks over the resulting set of pools: one System pool at least, versions in range.
	system := 0
	for _, p := range c.pools {
		mode, pv := p.props.Mode, p.cur
		for _, ch := range changes {
			if ch.p == p {
				mode, pv = ch.pp.Mode, ch.target
			}
		}
		if mode == modeSystem {
			system++
		}
		if e := checkPoolVersion(p.name, pv, target); e != nil {
			return nil, e
		}
	}
	for _, ch := range changes {
		if ch.state == stateCreating && ch.pp.Mode == modeSystem {
			system++
		}
	}
	if system == 0 {
		return nil, badRequest("MustDefineAtLeastOneSystemPool", "Must define at least one system pool.")
	}

	// Commit.
	identity, sp := identityFor(req.Identity, in.ServicePrincipalProfile, &c.mc, strings.ToLower(c.sub+"/"+c.rg+"/"+c.mc.Name), tenantOf(c.mc.Identity))
	props.ServicePrincipalProfile = sp
	c.mc.Identity = identity
	if req.SKU != nil {
		c.mc.SKU = clonePtr(req.SKU)
	}
	c.mc.Tags = maps.Clone(req.Tags)
	c.mc.Properties = &props
	state := stateUpdating
	if target.compare(c.cur) != 0 {
		state = stateUpgrading
	}
	c.target = target
	op := s.startClusterOp(c, state, now)
	for _, ch := range changes {
		p := ch.p
		p.props, p.target = ch.pp, ch.target
		if ch.state == stateCreating {
			p.cur = ch.target
			c.pools = append(c.pools, p)
		}
		if ch.state != "" {
			startPoolOp(p, ch.state, op)
		}
	}
	return op, nil
}

func tenantOf(id *clusterIdentity) string {
	if id == nil {
		return ""
	}
	return id.TenantID
}

func (s *Server) handleUpdateTags(w http.ResponseWriter, r *http.Request, rt *route) {
	var req tagsObject
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.errorLocked(w, notFound(rt))
		return
	}
	if e := checkPrecondition(r, "managed cluster", rt.name, c.etag, true); e != nil {
		s.errorLocked(w, e)
		return
	}
	if isBusy(c.state) {
		s.errorLocked(w, c.conflict())
		return
	}
	if bp := c.busyPool(); bp != nil {
		s.errorLocked(w, bp.conflict())
		return
	}
	c.mc.Tags = maps.Clone(req.Tags)
	c.touch()
	op := s.startClusterOp(c, stateUpdating, now)
	s.setAsyncHeaders(w, r, rt, op, false)
	s.respondLocked(w, http.StatusOK, c.render())
}

// handleDeleteCluster deletes a cluster. Unlike other mutations it is accepted while an
// operation runs (AKS lets a delete supersede an update); the superseded operation ends
// Canceled. Deleting a cluster that does not exist answers 204, as ARM does.
func (s *Server) handleDeleteCluster(w http.ResponseWriter, r *http.Request, rt *route) {
	now := s.now()
	s.mu.Lock()
	c := s.lookup(rt.key(), now)
	if c == nil {
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if e := checkPrecondition(r, "managed cluster", rt.name, c.etag, true); e != nil {
		s.errorLocked(w, e)
		return
	}
	op := s.ops[c.opID]
	if c.state != stateDeleting || op == nil {
		if isBusy(c.state) {
			s.cancelOperation(c.opID, now)
		}
		for _, p := range c.pools {
			if isBusy(p.state) {
				s.cancelOperation(p.opID, now)
			}
		}
		c.failNext = nil
		op = s.startClusterOp(c, stateDeleting, now)
		for _, p := range c.pools {
			startPoolOp(p, stateDeleting, op)
		}
	}
	s.setAsyncHeaders(w, r, rt, op, true)
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) handleListClusters(w http.ResponseWriter, r *http.Request, rt *route) {
	prefix := strings.ToLower(rt.sub) + "/"
	if rt.kind == routeClusterListRG {
		prefix += strings.ToLower(rt.rg) + "/"
	}
	skip := r.URL.Query().Get("$skipToken")
	now := s.now()
	s.mu.Lock()
	start, _ := slices.BinarySearch(s.keys, prefix)
	if skip != "" {
		i, found := slices.BinarySearch(s.keys, skip)
		if found {
			i++
		}
		start = max(start, i)
	}
	out := clusterList{Value: make([]managedCluster, 0, min(s.opts.ListPageSize, 16))}
	var gone []string
	i := start
	for ; i < len(s.keys) && strings.HasPrefix(s.keys[i], prefix); i++ {
		k := s.keys[i]
		c := s.clusters[k]
		if !c.settle(now) {
			gone = append(gone, k)
			continue
		}
		out.Value = append(out.Value, c.render())
		if len(out.Value) == s.opts.ListPageSize {
			if i+1 < len(s.keys) && strings.HasPrefix(s.keys[i+1], prefix) {
				out.NextLink = "https://" + r.Host + r.URL.Path + "?api-version=" + url.QueryEscape(rt.apiVersion) + "&$skipToken=" + url.QueryEscape(k)
			}
			break
		}
	}
	b, err := json.Marshal(out)
	for _, k := range gone {
		s.remove(k)
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, "aks simulator: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, http.StatusOK, b)
}

func (s *Server) handleOperation(w http.ResponseWriter, r *http.Request, rt *route) {
	now := s.now()
	s.mu.Lock()
	op := s.ops[rt.operationID]
	if op == nil || op.sub != strings.ToLower(rt.sub) {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusNotFound, "NotFound", "Operation '%s' was not found.", rt.operationID))
		return
	}
	status := op.statusAt(now)
	body := operationStatus{
		ID:        "/subscriptions/" + rt.sub + "/providers/Microsoft.ContainerService/locations/" + op.location + "/operations/" + op.id,
		Name:      op.id,
		Status:    status,
		StartTime: op.start.UTC().Format(time.RFC3339Nano),
	}
	if status != "InProgress" {
		body.EndTime = op.end.UTC().Format(time.RFC3339Nano)
		body.Error = op.err
	}
	s.mu.Unlock()

	if rt.kind == routeOperationResult {
		switch status {
		case "InProgress":
			w.Header().Set("Location", "https://"+r.Host+r.URL.RequestURI())
			setRetryAfter(w.Header(), s.opts.PollRetryAfter)
			w.WriteHeader(http.StatusAccepted)
		case stateSucceeded:
			w.WriteHeader(http.StatusNoContent)
		default:
			code := http.StatusBadRequest
			if status == stateCanceled {
				code = http.StatusConflict
			}
			writeError(w, errorf(code, body.Error.Code, "%s", body.Error.Message))
		}
		return
	}
	if status == "InProgress" {
		setRetryAfter(w.Header(), s.opts.PollRetryAfter)
	}
	writeJSON(w, http.StatusOK, body)
}
