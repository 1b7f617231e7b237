package eks

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Authentication modes of accessConfig.
const (
	AuthModeAPI             = "API"
	AuthModeAPIAndConfigMap = "API_AND_CONFIG_MAP"
	AuthModeConfigMap       = "CONFIG_MAP"
)

// Access policies the simulator knows. ClusterAdminPolicy at cluster scope is what EKS gives the
// cluster creator; the simulator's TokenReview maps it to the group system:masters, because a
// backing kube-apiserver authorizes with RBAC only (EKS uses its own authorizer for policies).
const (
	ClusterAdminPolicy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
	AdminPolicy        = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy"
	EditPolicy         = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy"
	ViewPolicy         = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
)

// MastersGroup is the group the simulator's TokenReview gives a principal with
// ClusterAdminPolicy at cluster scope.
const MastersGroup = "system:masters"

type accessEntry struct {
	principal, arn, username, typ string
	groups                        []string
	tags                          map[string]string
	createdAt, modifiedAt         time.Time
	policies                      []associatedPolicy
}

type associatedPolicy struct {
	policyARN           string
	scopeType           string
	namespaces          []string
	associatedAt, modAt time.Time
}

// Wire shapes.

type accessEntryJSON struct {
	ClusterName      string            `json:"clusterName"`
	PrincipalArn     string            `json:"principalArn"`
	KubernetesGroups []string          `json:"kubernetesGroups"`
	AccessEntryArn   string            `json:"accessEntryArn"`
	CreatedAt        epoch             `json:"createdAt"`
	ModifiedAt       epoch             `json:"modifiedAt"`
	Tags             map[string]string `json:"tags"`
	Username         string            `json:"username"`
	Type             string            `json:"type"`
}

type accessScopeJSON struct {
	Type       string   `json:"type"`
	Namespaces []string `json:"namespaces"`
}

type associatedPolicyJSON struct {
	PolicyArn    string          `json:"policyArn"`
	AccessScope  accessScopeJSON `json:"accessScope"`
	AssociatedAt epoch           `json:"associatedAt"`
	ModifiedAt   epoch           `json:"modifiedAt"`
}

type createAccessEntryRequest struct {
	PrincipalArn     *string           `json:"principalArn"`
	KubernetesGroups []string          `json:"kubernetesGroups"`
	Tags             map[string]string `json:"tags"`
	Username         *string           `json:"username"`
	Type             *string           `json:"type"`
}

type associateAccessPolicyRequest struct {
	PolicyArn   *string          `json:"policyArn"`
	AccessScope *accessScopeJSON `json:"accessScope"`
}

type accessEntryResponse struct {
	AccessEntry *accessEntryJSON `json:"accessEntry"`
}

var knownPolicies = []string{ClusterAdminPolicy, AdminPolicy, EditPolicy, ViewPolicy}

// Principal returns the IAM principal ARN an access key belongs to.
func (s *Server) Principal(accessKey string) string { return s.principals[accessKey] }

// SetBackend makes b serve the cluster name in region (nil: none): DescribeCluster reports b's
// endpoint and CA, and b's TokenReview path accepts tokens for the cluster.
func (s *Server) SetBackend(region, name string, b *simcore.Backend) error {
	var now time.Time
	cl, err := s.lockCluster(region, name, &now)
	if err != nil {
		return errors.New("eks simulator: no cluster " + name + " in " + region)
	}
	old := cl.backend
	cl.backend = b
	cl.mu.Unlock()
	s.indexBackend(clusterKey{region, name}, old, b)
	return nil
}

func (s *Server) indexBackend(k clusterKey, old, b *simcore.Backend) {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	if old != nil {
		delete(s.served[old.Name], k)
	}
	if b != nil {
		m := s.served[b.Name]
		if m == nil {
			m = map[clusterKey]bool{}
			s.served[b.Name] = m
		}
		m[k] = true
	}
}

// addCreatorEntry gives the principal of accessKey the access entry EKS creates for the cluster
// creator: type STANDARD, ClusterAdminPolicy at cluster scope. cl must be locked.
func (s *Server) addCreatorEntry(cl *cluster, accessKey string, now time.Time) {
	p := s.principals[accessKey]
	if p == "" {
		return
	}
	e := s.newEntry(cl, p, "", "STANDARD", nil, nil, now)
	e.policies = []associatedPolicy{{policyARN: ClusterAdminPolicy, scopeType: "cluster", associatedAt: now, modAt: now}}
	cl.access[p] = e
}

func (s *Server) newEntry(cl *cluster, principal, username, typ string, groups []string, tags map[string]string, now time.Time) *accessEntry {
	if username == "" {
		username = defaultUsername(principal)
	}
	kind, rest := "user", principal
	if i := strings.Index(principal, ":role/"); i >= 0 {
		kind, rest = "role", principal[i+len(":role/"):]
	} else if i := strings.Index(principal, ":user/"); i >= 0 {
		rest = principal[i+len(":user/"):]
	}
	return &accessEntry{
		principal: principal, username: username, typ: typ, groups: groups, tags: tags,
		arn:       "arn:aws:eks:" + cl.region + ":" + s.account + ":access-entry/" + cl.name + "/" + kind + "/" + s.account + "/" + rest + "/" + stableHex(principal, 8),
		createdAt: now, modifiedAt: now,
	}
}

// defaultUsername is the Kubernetes username EKS gives a principal: the user's ARN, or for a
// role its assumed-role session ARN template.
func defaultUsername(principal string) string {
	if i := strings.Index(principal, ":role/"); i >= 0 {
		acct := strings.TrimPrefix(principal[:i], "arn:aws:iam::")
		role := principal[i+len(":role/"):]
		if j := strings.LastIndex(role, "/"); j >= 0 {
			role = role[j+1:]
		}
		return "arn:aws:sts::" + acct + ":assumed-role/" + role + "/{{SessionName}}"
	}
	return principal
}

func (e *accessEntry) wire(cluster string) *accessEntryJSON {
	tags := e.tags
	if tags == nil {
		tags = emptyMap
	}
	return &accessEntryJSON{
		ClusterName: cluster, PrincipalArn: e.principal, KubernetesGroups: nonNil(e.groups),
		AccessEntryArn: e.arn, CreatedAt: epoch(e.createdAt), ModifiedAt: epoch(e.modifiedAt),
		Tags: tags, Username: e.username, Type: e.typ,
	}
}

func (p associatedPolicy) wire() associatedPolicyJSON {
	return associatedPolicyJSON{
		PolicyArn: p.policyARN, AccessScope: accessScopeJSON{Type: p.scopeType, Namespaces: nonNil(p.namespaces)},
		AssociatedAt: epoch(p.associatedAt), ModifiedAt: epoch(p.modAt),
	}
}

func accessEntryNotFound(cluster, principal string) *apiError {
	return resourceNotFound("The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'.").forCluster(cluster, "")
}

func checkAPIMode(cl *cluster) error {
	if cl.authMode == AuthModeConfigMap {
		return newAPIError(http.StatusBadRequest, "InvalidRequestException",
			"The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] to perform this operation.")
	}
	if cl.access == nil {
		cl.access = map[string]*accessEntry{}
	}
	return nil
}

func (s *Server) createAccessEntry(c *call) (any, error) {
	var req createAccessEntryRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	p := deref(req.PrincipalArn)
	if !strings.HasPrefix(p, "arn:aws:iam::") || (!strings.Contains(p, ":user/") && !strings.Contains(p, ":role/")) {
		return nil, invalidParam("The specified principalArn is invalid: invalid ARN")
	}
	typ := "STANDARD"
	if req.Type != nil {
		typ = *req.Type
	}
	for _, g := range req.KubernetesGroups {
		if strings.HasPrefix(g, "system:") {
			return nil, invalidParam("The kubernetes group name %s is invalid, it cannot start with system:", g)
		}
	}
	if err := checkTags(req.Tags, invalidParam); err != nil {
		return nil, err
	}
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	if err := checkAPIMode(cl); err != nil {
		return nil, err
	}
	if cl.access[p] != nil {
		return nil, resourceInUse("The specified access entry resource is already in use on this cluster.").forCluster(cl.name, "")
	}
	e := s.newEntry(cl, p, deref(req.Username), typ, slices.Clone(req.KubernetesGroups), nonEmpty(maps.Clone(req.Tags)), c.now)
	cl.access[p] = e
	return accessEntryResponse{e.wire(cl.name)}, nil
}

func (s *Server) describeAccessEntry(c *call) (any, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	p := c.r.PathValue("principal")
	e := cl.access[p]
	if e == nil {
		return nil, accessEntryNotFound(cl.name, p)
	}
	return accessEntryResponse{e.wire(cl.name)}, nil
}

func (s *Server) deleteAccessEntry(c *call) (any, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	p := c.r.PathValue("principal")
	if cl.access[p] == nil {
		return nil, accessEntryNotFound(cl.name, p)
	}
	delete(cl.access, p)
	return struct{}{}, nil
}

func (s *Server) listAccessEntries(c *call) (any, error) {
	q := c.r.URL.Query()
	maxResults := 100
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, invalidParam("maxResults must be between 1 and 100")
		}
		maxResults = n
	}
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	policy := q.Get("associatedPolicyArn")
	var names []string
	for p, e := range cl.access {
		if policy == "" || slices.ContainsFunc(e.policies, func(ap associatedPolicy) bool { return ap.policyARN == policy }) {
			names = append(names, p)
		}
	}
	cl.mu.Unlock()
	slices.Sort(names)
	start := 0
	if tok := q.Get("nextToken"); tok != "" {
		start, _ = slices.BinarySearch(names, tok)
	}
	out := struct {
		AccessEntries []string `json:"accessEntries"`
		NextToken     string   `json:"nextToken,omitempty"`
	}{AccessEntries: []string{}}
	end := min(start+maxResults, len(names))
	out.AccessEntries = append(out.AccessEntries, names[start:end]...)
	if end < len(names) {
		out.NextToken = names[end]
	}
	return out, nil
}

func (s *Server) associateAccessPolicy(c *call) (any, error) {
	var req associateAccessPolicyRequest
	if err := c.decode(&req); err != nil {
		return nil, err
	}
	policy := deref(req.PolicyArn)
	if !slices.Contains(knownPolicies, policy) {
		return nil, invalidParam("The specified policyArn is invalid: %s", policy)
	}
	if req.AccessScope == nil || (req.AccessScope.Type != "cluster" && req.AccessScope.Type != "namespace") {
		return nil, invalidParam("accessScope.type must be cluster or namespace")
	}
	if req.AccessScope.Type == "namespace" && len(req.AccessScope.Namespaces) == 0 {
		return nil, invalidParam("accessScope.namespaces is required for a namespace scope")
	}
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	p := c.r.PathValue("principal")
	e := cl.access[p]
	if e == nil {
		return nil, accessEntryNotFound(cl.name, p)
	}
	ap := associatedPolicy{policyARN: policy, scopeType: req.AccessScope.Type, namespaces: slices.Clone(req.AccessScope.Namespaces), associatedAt: c.now, modAt: c.now}
	pols := slices.Clone(e.policies)
	if i := slices.IndexFunc(pols, func(x associatedPolicy) bool { return x.policyARN == policy }); i >= 0 {
		ap.associatedAt = pols[i].associatedAt
		pols[i] = ap
	} else {
		pols = append(pols, ap)
	}
	e.policies = pols
	return struct {
		ClusterName            string               `json:"clusterName"`
		PrincipalArn           string               `json:"principalArn"`
		AssociatedAccessPolicy associatedPolicyJSON `json:"associatedAccessPolicy"`
	}{cl.name, p, ap.wire()}, nil
}

func (s *Server) listAssociatedAccessPolicies(c *call) (any, error) {
	cl, err := s.lockCluster(c.region, c.r.PathValue("name"), &c.now)
	if err != nil {
		return nil, err
	}
	defer cl.mu.Unlock()
	p := c.r.PathValue("principal")
	e := cl.access[p]
	if e == nil {
		return nil, accessEntryNotFound(cl.name, p)
	}
	out := make([]associatedPolicyJSON, 0, len(e.policies))
	for _, ap := range e.policies {
		out = append(out, ap.wire())
	}
	return struct {
		ClusterName              string                 `json:"clusterName"`
		PrincipalArn             string                 `json:"principalArn"`
		AssociatedAccessPolicies []associatedPolicyJSON `json:"associatedAccessPolicies"`
	}{cl.name, p, out}, nil
}
