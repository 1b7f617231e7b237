package aks

import (
	"net/http"
	"strings"
)

type routeKind int

const (
	routeUnknown routeKind = iota
	routeBadMethod
	routeOpenIDConfig
	routeInstanceDiscovery
	routeToken
	routeClusterList
	routeClusterListRG
	routeCluster
	routeAdminCredential
	routeUserCredential
	routePoolList
	routePool
	routeOperation
	routeOperationResult
	routeSubscriptionList
	routeTenantList
	routeMetadata
)

// route is a parsed request path: what is addressed and the operation name it is counted
// under (the SDK's client.method names).
type route struct {
	kind                  routeKind
	op                    string
	tenant                string
	sub, rg, name, pool   string
	location, operationID string
	apiVersion            string
}

func (rt *route) isEntra() bool {
	return rt.kind == routeOpenIDConfig || rt.kind == routeInstanceDiscovery || rt.kind == routeToken
}

// key is the store key of the addressed cluster: ARM names are case-insensitive.
func (rt *route) key() string { return clusterKey(rt.sub, rt.rg, rt.name) }

func clusterKey(sub, rg, name string) string {
	return strings.ToLower(sub) + "/" + strings.ToLower(rg) + "/" + strings.ToLower(name)
}

// methodOp maps an HTTP method to an operation name, or marks the route as a bad method.
func (rt *route) methodOp(method string, ops map[string]string) {
	op, ok := ops[method]
	if !ok {
		rt.kind = routeBadMethod
		rt.op = "Unsupported"
		return
	}
	rt.op = op
}

var (
	clusterOps = map[string]string{
		http.MethodGet:    "ManagedClusters.Get",
		http.MethodPut:    "ManagedClusters.CreateOrUpdate",
		http.MethodPatch:  "ManagedClusters.UpdateTags",
		http.MethodDelete: "ManagedClusters.Delete",
	}
	poolOps = map[string]string{
		http.MethodGet:    "AgentPools.Get",
		http.MethodPut:    "AgentPools.CreateOrUpdate",
		http.MethodDelete: "AgentPools.Delete",
	}
	listOps        = map[string]string{http.MethodGet: "ManagedClusters.List"}
	listRGOps      = map[string]string{http.MethodGet: "ManagedClusters.ListByResourceGroup"}
	poolListOps    = map[string]string{http.MethodGet: "AgentPools.List"}
	adminCredOps   = map[string]string{http.MethodPost: "ManagedClusters.ListClusterAdminCredentials"}
	userCredOps    = map[string]string{http.MethodPost: "ManagedClusters.ListClusterUserCredentials"}
	operationOps   = map[string]string{http.MethodGet: "Operations.Get"}
	opResultOps    = map[string]string{http.MethodGet: "OperationResults.Get"}
	openIDOps      = map[string]string{http.MethodGet: "OpenIDConfiguration"}
	discoveryOps   = map[string]string{http.MethodGet: "InstanceDiscovery"}
	tokenOps       = map[string]string{http.MethodPost: "Token"}
	subListOps     = map[string]string{http.MethodGet: "Subscriptions.List"}
	tenantListOps  = map[string]string{http.MethodGet: "Tenants.List"}
	metadataOps    = map[string]string{http.MethodGet: "MetadataEndpoints"}
	providerPrefix = "microsoft.containerservice"
)

func parseRoute(r *http.Request) *route {
	rt := &route{kind: routeUnknown, op: "Unknown"}
	p := strings.Trim(r.URL.Path, "/")
	var segs [12]string
	n := 0
	for p != "" && n < len(segs) {
		seg, rest, _ := strings.Cut(p, "/")
		segs[n] = seg
		n++
		p = rest
	}
	if p != "" { // more segments than any route has
		return rt
	}
	eq := strings.EqualFold
	s := segs[:n]

	switch {
	case n == 4 && eq(s[1], "v2.0") && eq(s[2], ".well-known") && eq(s[3], "openid-configuration"):
		rt.kind, rt.tenant = routeOpenIDConfig, s[0]
		rt.methodOp(r.Method, openIDOps)
		return rt
	case n == 4 && eq(s[1], "oauth2") && eq(s[2], "v2.0") && eq(s[3], "token"):
		rt.kind, rt.tenant = routeToken, s[0]
		rt.methodOp(r.Method, tokenOps)
		return rt
	case n == 3 && eq(s[0], "common") && eq(s[1], "discovery") && eq(s[2], "instance"):
		rt.kind = routeInstanceDiscovery
		rt.methodOp(r.Method, discoveryOps)
		return rt
	// An ADFS-style authority (https://host/adfs): MSAL does no instance discovery for it and
	// the tenant is not in the path (as on Azure Stack Hub).
	case n == 3 && eq(s[0], adfsTenant) && eq(s[1], ".well-known") && eq(s[2], "openid-configuration"):
		rt.kind, rt.tenant = routeOpenIDConfig, adfsTenant
		rt.methodOp(r.Method, openIDOps)
		return rt
	case n == 3 && eq(s[0], adfsTenant) && eq(s[1], "oauth2") && eq(s[2], "token"):
		rt.kind, rt.tenant = routeToken, adfsTenant
		rt.methodOp(r.Method, tokenOps)
		return rt
	// ARM's own listings, which az login calls after getting a token.
	case n == 1 && eq(s[0], "subscriptions"):
		rt.kind = routeSubscriptionList
		rt.methodOp(r.Method, subListOps)
		return rt
	case n == 1 && eq(s[0], "tenants"):
		rt.kind = routeTenantList
		rt.methodOp(r.Method, tenantListOps)
		return rt
	// The cloud's endpoints, unauthenticated, as az cloud register reads them.
	case n == 2 && eq(s[0], "metadata") && eq(s[1], "endpoints"):
		rt.kind = routeMetadata
		rt.methodOp(r.Method, metadataOps)
		return rt
	}

	if n < 5 || !eq(s[0], "subscriptions") {
		return rt
	}
	rt.sub = s[1]
	if eq(s[2], "providers") {
		if !eq(s[3], providerPrefix) {
			return rt
		}
		switch {
		case n == 5 && eq(s[4], "managedClusters"):
			rt.kind = routeClusterList
			rt.methodOp(r.Method, listOps)
		case n == 8 && eq(s[4], "locations") && eq(s[6], "operations"):
			rt.kind, rt.location, rt.operationID = routeOperation, s[5], s[7]
			rt.methodOp(r.Method, operationOps)
		case n == 8 && eq(s[4], "locations") && eq(s[6], "operationresults"):
			rt.kind, rt.location, rt.operationID = routeOperationResult, s[5], s[7]
			rt.methodOp(r.Method, opResultOps)
		}
		return rt
	}
	if n < 7 || !eq(s[2], "resourceGroups") || !eq(s[4], "providers") || !eq(s[5], providerPrefix) || !eq(s[6], "managedClusters") {
		return rt
	}
	rt.rg = s[3]
	switch n {
	case 7:
		rt.kind = routeClusterListRG
		rt.methodOp(r.Method, listRGOps)
	case 8:
		rt.kind, rt.name = routeCluster, s[7]
		rt.methodOp(r.Method, clusterOps)
	case 9:
		rt.name = s[7]
		switch {
		case eq(s[8], "listClusterAdminCredential"):
			rt.kind = routeAdminCredential
			rt.methodOp(r.Method, adminCredOps)
		case eq(s[8], "listClusterUserCredential"):
			rt.kind = routeUserCredential
			rt.methodOp(r.Method, userCredOps)
		case eq(s[8], "agentPools"):
			rt.kind = routePoolList
			rt.methodOp(r.Method, poolListOps)
		}
	case 10:
		if eq(s[8], "agentPools") {
			rt.kind, rt.name, rt.pool = routePool, s[7], s[9]
			rt.methodOp(r.Method, poolOps)
		}
	}
	return rt
}
