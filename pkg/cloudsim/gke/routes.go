package gke

import (
	"net/http"
	"strings"
)

// handlerFunc serves one API method; it returns the JSON body of a 200 answer or an error.
type handlerFunc func(s *Server, r *http.Request, rt *route) ([]byte, *apiError)

// route is a parsed API request: the resource names from the path and the method to run.
type route struct {
	project   string
	location  string // a region or zone; "-" lists every location
	cluster   string
	pool      string
	operation string
	op        string // counter and fault name, e.g. "clusters.get"
	write     bool
	handler   handlerFunc
}

type method struct {
	op      string
	write   bool
	handler handlerFunc
}

// The method tables are keyed by HTTP method plus, for custom methods, ":verb". The zonal
// (projects.zones.*) forms use path suffixes instead of verbs; zonalVerbs maps them.
var (
	clustersCollection = map[string]method{
		"GET":  {"clusters.list", false, handleListClusters},
		"POST": {"clusters.create", true, handleCreateCluster},
	}
	clusterResource = map[string]method{
		"GET":                       {"clusters.get", false, handleGetCluster},
		"PUT":                       {"clusters.update", true, handleUpdateCluster},
		"DELETE":                    {"clusters.delete", true, handleDeleteCluster},
		"POST:setResourceLabels":    {"clusters.setResourceLabels", true, handleSetResourceLabels},
		"POST:setLogging":           {"clusters.setLogging", true, handleSetLogging},
		"POST:setMonitoring":        {"clusters.setMonitoring", true, handleSetMonitoring},
		"POST:setLocations":         {"clusters.setLocations", true, handleSetLocations},
		"POST:updateMaster":         {"clusters.updateMaster", true, handleUpdateMaster},
		"POST:setMaintenancePolicy": {"clusters.setMaintenancePolicy", true, handleSetMaintenancePolicy},
	}
	poolsCollection = map[string]method{
		"GET":  {"nodePools.list", false, handleListNodePools},
		"POST": {"nodePools.create", true, handleCreateNodePool},
	}
	poolResource = map[string]method{
		"GET":                 {"nodePools.get", false, handleGetNodePool},
		"PUT":                 {"nodePools.update", true, handleUpdateNodePool},
		"DELETE":              {"nodePools.delete", true, handleDeleteNodePool},
		"POST:update":         {"nodePools.update", true, handleUpdateNodePool}, // zonal form
		"POST:setSize":        {"nodePools.setSize", true, handleSetNodePoolSize},
		"POST:setAutoscaling": {"nodePools.setAutoscaling", true, handleSetNodePoolAutoscaling},
		"POST:setManagement":  {"nodePools.setManagement", true, handleSetNodePoolManagement},
	}
	operationsCollection = map[string]method{"GET": {"operations.list", false, handleListOperations}}
	operationResource    = map[string]method{"GET": {"operations.get", false, handleGetOperation}}
	serverConfigResource = map[string]method{"GET": {"getServerConfig", false, handleGetServerConfig}}

	zonalClusterVerbs = map[string]string{
		"resourceLabels": "setResourceLabels", "logging": "setLogging", "monitoring": "setMonitoring",
		"locations": "setLocations", "master": "updateMaster",
	}
	zonalPoolVerbs = map[string]string{
		"update": "update", "setSize": "setSize", "autoscaling": "setAutoscaling", "setManagement": "setManagement",
	}
)

// parseRoute maps a request to an API method. Both the projects.locations.* form
// (v1/projects/P/locations/L/clusters/C:verb) and the older projects.zones.* form
// (v1/projects/P/zones/Z/clusters/C/verb) are understood.
func parseRoute(httpMethod, path string) (route, bool) {
	var rt route
	rest, ok := strings.CutPrefix(path, "/v1/projects/")
	if !ok {
		return rt, false
	}
	segs := strings.Split(rest, "/")
	if len(segs) < 4 || segs[0] == "" || segs[2] == "" {
		return rt, false
	}
	rt.project, rt.location = segs[0], segs[2]
	zonal := false
	switch segs[1] {
	case "locations":
	case "zones":
		zonal = true
	default:
		return rt, false
	}
	segs = segs[3:]
	verb := ""
	last := segs[len(segs)-1]
	if i := strings.IndexByte(last, ':'); i >= 0 {
		verb, segs[len(segs)-1] = last[i+1:], last[:i]
	}
	for _, seg := range segs {
		if seg == "" {
			return rt, false
		}
	}
	var table map[string]method
	switch {
	case len(segs) == 1 && segs[0] == "clusters":
		table = clustersCollection
	case len(segs) == 2 && segs[0] == "clusters":
		rt.cluster, table = segs[1], clusterResource
	case len(segs) == 3 && segs[0] == "clusters" && segs[2] == "nodePools":
		rt.cluster, table = segs[1], poolsCollection
	case len(segs) == 3 && segs[0] == "clusters" && zonal && verb == "":
		rt.cluster, table = segs[1], clusterResource
		if verb = zonalClusterVerbs[segs[2]]; verb == "" {
			return rt, false
		}
	case len(segs) == 4 && segs[0] == "clusters" && segs[2] == "nodePools":
		rt.cluster, rt.pool, table = segs[1], segs[3], poolResource
	case len(segs) == 5 && segs[0] == "clusters" && segs[2] == "nodePools" && zonal && verb == "":
		rt.cluster, rt.pool, table = segs[1], segs[3], poolResource
		if verb = zonalPoolVerbs[segs[4]]; verb == "" {
			return rt, false
		}
	case len(segs) == 1 && segs[0] == "operations":
		table = operationsCollection
	case len(segs) == 2 && segs[0] == "operations":
		rt.operation, table = segs[1], operationResource
	case len(segs) == 1 && (segs[0] == "serverConfig" || segs[0] == "serverconfig"):
		table = serverConfigResource
	default:
		return rt, false
	}
	key := httpMethod
	if verb != "" {
		key += ":" + verb
	}
	m, ok := table[key]
	if !ok {
		return rt, false
	}
	rt.op, rt.write, rt.handler = m.op, m.write, m.handler
	return rt, true
}

// permission is the IAM permission GKE checks for the method.
func (rt *route) permission() string {
	switch {
	case strings.HasPrefix(rt.op, "operations."):
		return "container." + rt.op
	case rt.op == "clusters.list" || rt.op == "getServerConfig":
		return "container.clusters.list"
	case rt.op == "clusters.create" || rt.op == "clusters.delete" || rt.op == "clusters.get":
		return "container." + rt.op
	case !rt.write:
		return "container.clusters.get"
	default:
		return "container.clusters.update"
	}
}

// resource is the resource name GKE reports in errors about the request.
func (rt *route) resource() string {
	switch {
	case rt.pool != "":
		return poolName(rt.project, rt.location, rt.cluster, rt.pool)
	case rt.cluster != "":
		return clusterName(rt.project, rt.location, rt.cluster)
	case rt.operation != "":
		return "projects/" + rt.project + "/locations/" + rt.location + "/operations/" + rt.operation
	default:
		return "projects/" + rt.project + "/locations/" + rt.location
	}
}

func clusterName(project, location, cluster string) string {
	return "projects/" + project + "/locations/" + location + "/clusters/" + cluster
}

func poolName(project, location, cluster, pool string) string {
	return clusterName(project, location, cluster) + "/nodePools/" + pool
}
