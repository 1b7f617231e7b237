// Package gke is the Google GKE provider of the hosted-cluster sync engine, built on
// google.golang.org/api/container/v1.
package gke

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Credential Secret keys.
const (
	KeyServiceAccountJSON = "serviceAccountJSON"
	KeyEndpoint           = "endpoint"
)

// Defaults GKE itself applies, made explicit for clusters drover creates.
const (
	DefaultLoggingService    = "logging.googleapis.com/kubernetes"
	DefaultMonitoringService = "monitoring.googleapis.com/kubernetes"
	DefaultMachineType       = "e2-medium"
	DefaultDiskType          = "pd-balanced"
	DefaultImageType         = "COS_CONTAINERD"
	DefaultDiskSizeGb        = 100
	DefaultNodeCount         = 3
)

// DefaultOAuthScopes are the node OAuth scopes GKE gives a pool created without any.
var DefaultOAuthScopes = []string{
	"https://www.googleapis.com/auth/devstorage.read_only",
	"https://www.googleapis.com/auth/logging.write",
	"https://www.googleapis.com/auth/monitoring",
	"https://www.googleapis.com/auth/service.management.readonly",
	"https://www.googleapis.com/auth/servicecontrol",
	"https://www.googleapis.com/auth/trace.append",
}

// Provider is the GKE provider.
type Provider struct {
	// OperationsMaxAge is how long one operations.list answer serves every cluster of its
	// location when looking for operations drover did not start: zero means
	// DefaultOperationsMaxAge, negative lists on every pass.
	OperationsMaxAge time.Duration
}

var _ hosted.Provider = Provider{}

var schema = merge.Schema{
	Maps:       []string{"labels", "nodePools.*.config.labels"},
	NamedLists: map[string]string{"nodePools": "name"},
	Sets:       []string{"locations", "nodePools.*.config.tags", "nodePools.*.config.oauthScopes"},
}

// Name implements hosted.Provider.
func (Provider) Name() string { return "gke" }

// Matches implements hosted.Provider.
func (Provider) Matches(c *v1.Cluster) bool { return c.Spec.GKEConfig != nil }

// Schema implements hosted.Provider.
func (Provider) Schema() merge.Schema { return schema }

var slots = hosted.Slots[v1.GKEClusterConfig]{
	Config: func(c *v1.Cluster) **v1.GKEClusterConfig { return &c.Spec.GKEConfig },
	Status: func(c *v1.Cluster, create bool) (**v1.GKEClusterConfig, **v1.GKEClusterConfig) {
		if c.Status.GKEStatus == nil {
			if !create {
				return nil, nil
			}
			c.Status.GKEStatus = &v1.GKEStatus{}
		}
		return &c.Status.GKEStatus.UpstreamSpec, &c.Status.GKEStatus.AppliedSpec
	},
}

// Config implements hosted.Provider.
func (Provider) Config(c *v1.Cluster) (map[string]any, error) { return slots.ConfigTree(c) }

// Applied implements hosted.Provider.
func (Provider) Applied(c *v1.Cluster) (map[string]any, error) { return slots.AppliedTree(c) }

// Upstream implements hosted.Provider.
func (Provider) Upstream(c *v1.Cluster) (map[string]any, error) { return slots.UpstreamTree(c) }

// SetConfig implements hosted.Provider.
func (Provider) SetConfig(c *v1.Cluster, config map[string]any) error {
	return slots.SetConfigTree(c, config)
}

// SetStatus implements hosted.Provider.
func (Provider) SetStatus(c *v1.Cluster, upstream, applied map[string]any, obs *hosted.Observation) error {
	if err := slots.SetStatusTrees(c, upstream, applied); err != nil {
		return err
	}
	if obs != nil {
		st := c.Status.GKEStatus
		st.Status, st.Endpoint, st.Version = obs.Status, obs.Details["endpoint"], obs.Details["version"]
	}
	return nil
}

// Imported implements hosted.Provider.
func (Provider) Imported(c *v1.Cluster) bool { return c.Spec.GKEConfig.Imported }

// CredentialSecret implements hosted.Provider.
func (Provider) CredentialSecret(c *v1.Cluster) string { return c.Spec.GKEConfig.CredentialSecret }

// RateLimitKey implements hosted.Provider: GKE's API quota is per project.
func (Provider) RateLimitKey(c *v1.Cluster, _ *corev1.Secret) string {
	return "gke/" + c.Spec.GKEConfig.ProjectID
}

// CreateBase implements hosted.Provider: clusters.create sets everything, node pools included.
func (Provider) CreateBase(config map[string]any) map[string]any { return config }

// location is the cluster's region or zone.
func location(cfg *v1.GKEClusterConfig) string {
	if cfg.Zone != "" {
		return cfg.Zone
	}
	return cfg.Region
}

// Connect implements hosted.Provider. API calls go through the engine's rate-limited transport,
// under the authorization layer; the token exchange does not count against the project quota.
func (p Provider) Connect(ctx context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (hosted.Session, error) {
	cfg := c.Spec.GKEConfig
	key := s.Data[KeyServiceAccountJSON]
	if len(key) == 0 {
		return nil, &hosted.FieldError{Field: "gkeConfig.credentialSecret", Reason: v1.ReasonSecretIncomplete,
			Message: fmt.Sprintf("Secret %s/%s lacks key %s: add a service-account JSON key (keys: serviceAccountJSON, optional endpoint).", s.Namespace, s.Name, KeyServiceAccountJSON)}
	}
	endpoint := strings.TrimRight(strings.TrimSpace(string(s.Data[KeyEndpoint])), "/")
	// One container.Service per Secret version (hosted.Clients): building one parses the key,
	// and its credentials cache the access token (one token exchange per hour, not per pass).
	svc, err := hosted.CachedClient(hosted.Clients, hosted.NewClientKey("gke", s, endpoint, transport), func() (*container.Service, error) {
		return newService(ctx, key, endpoint, transport)
	})
	if err != nil {
		return nil, &hosted.FieldError{Field: "gkeConfig.credentialSecret", Reason: v1.ReasonSecretInvalid,
			Message: fmt.Sprintf("Secret %s/%s key %s is not a usable service-account JSON key: %v", s.Namespace, s.Name, KeyServiceAccountJSON, err)}
	}
	maxAge := p.OperationsMaxAge
	if maxAge == 0 {
		maxAge = DefaultOperationsMaxAge
	}
	return &session{
		api:       &sdkAPI{svc: svc},
		cfg:       cfg,
		parent:    "projects/" + cfg.ProjectID + "/locations/" + location(cfg),
		client:    svc,
		opsMaxAge: maxAge,
	}, nil
}

func newService(ctx context.Context, key []byte, endpoint string, transport hosted.Transport) (*container.Service, error) {
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{
		Scopes: []string{container.CloudPlatformScope},
		// The token exchange gives up too (its default client waits for ever).
		Client: &http.Client{Transport: hosted.SharedTransport(), Timeout: hosted.RequestTimeout},
	})
	if err != nil {
		return nil, err
	}
	return serviceWith(ctx, creds, endpoint, transport)
}

func serviceWith(ctx context.Context, creds *auth.Credentials, endpoint string, transport hosted.Transport) (*container.Service, error) {
	if transport == nil {
		transport = hosted.SharedTransport()
	}
	// No request waits for ever (the transport also bounds the wait for headers).
	hc := &http.Client{Transport: transport, Timeout: hosted.RequestTimeout}
	if err := httptransport.AddAuthorizationMiddleware(hc, creds); err != nil {
		return nil, err
	}
	opts := []option.ClientOption{option.WithHTTPClient(hc)}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint+"/"))
	}
	return container.NewService(ctx, opts...)
}

// Validate implements hosted.Provider: the config alone, before anything is sent.
func (Provider) Validate(c *v1.Cluster) error {
	cfg := c.Spec.GKEConfig
	bad := func(field, reason, format string, args ...any) error {
		return &hosted.FieldError{Field: "gkeConfig." + field, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case cfg.ClusterName == "":
		return bad("clusterName", v1.ReasonMissingField, "the GKE cluster name is required")
	case !nameRE.MatchString(cfg.ClusterName):
		return bad("clusterName", v1.ReasonInvalidName, "%q is not a GKE cluster name: lowercase letters, digits and '-', starting with a letter, at most 40 characters", cfg.ClusterName)
	case cfg.ProjectID == "":
		return bad("projectID", v1.ReasonMissingField, "the Google Cloud project ID is required")
	case cfg.CredentialSecret == "":
		return bad("credentialSecret", v1.ReasonMissingField, "the name of the credential Secret is required")
	case cfg.Region == "" && cfg.Zone == "":
		return bad("region", v1.ReasonMissingField, "a region (regional cluster, e.g. europe-west1) or a zone (zonal cluster, e.g. europe-west1-b) is required")
	case cfg.Region != "" && cfg.Zone != "":
		return bad("zone", v1.ReasonRegionAndZone, "set either region (regional cluster) or zone (zonal cluster), not both")
	case cfg.Region != "" && (!regionRE.MatchString(cfg.Region) || isZone(cfg.Region)):
		return bad("region", v1.ReasonInvalidLocation, "%q is not a Google Cloud region such as europe-west1", cfg.Region)
	case cfg.Zone != "" && (!regionRE.MatchString(cfg.Zone) || !isZone(cfg.Zone) || !zoneLetterRE.MatchString(cfg.Zone)):
		return bad("zone", v1.ReasonInvalidLocation, "%q is not a Google Cloud zone such as europe-west1-b", cfg.Zone)
	case !slices.Contains(Regions, regionOf(location(cfg))):
		field := "region"
		if cfg.Zone != "" {
			field = "zone"
		}
		return bad(field, v1.ReasonUnknownRegion, "%q is not in a Google Cloud region that has GKE (e.g. us-central1, europe-west1)", location(cfg))
	}
	var master version
	if cfg.KubernetesVersion != nil {
		v, ok := parseVersion(*cfg.KubernetesVersion)
		if !ok {
			return bad("kubernetesVersion", v1.ReasonInvalidVersion, "%q is not a GKE version such as \"1.33\" or \"1.33.5-gke.1162000\"", *cfg.KubernetesVersion)
		}
		master = v
	}
	if !cfg.Imported {
		switch {
		case cfg.KubernetesVersion == nil:
			return bad("kubernetesVersion", v1.ReasonMissingField, "required to create a cluster, e.g. \"1.33\"")
		case len(cfg.NodePools) == 0:
			return bad("nodePools", v1.ReasonMissingField, "required to create a cluster: at least one node pool")
		}
	}
	if err := validateLabels("labels", cfg.Labels); err != nil {
		return err
	}
	if cfg.LoggingService != nil && !slices.Contains(LoggingServices, *cfg.LoggingService) {
		return bad("loggingService", v1.ReasonInvalidService, "%q is not one of %s", *cfg.LoggingService, strings.Join(LoggingServices, ", "))
	}
	if cfg.MonitoringService != nil && !slices.Contains(MonitoringServices, *cfg.MonitoringService) {
		return bad("monitoringService", v1.ReasonInvalidService, "%q is not one of %s", *cfg.MonitoringService, strings.Join(MonitoringServices, ", "))
	}
	if man := cfg.MasterAuthorizedNetworks; man != nil {
		if len(man.CIDRBlocks) > 50 {
			return bad("masterAuthorizedNetworks.cidrBlocks", v1.ReasonTooManyCIDRBlocks, "at most 50 CIDR blocks are allowed, got %d", len(man.CIDRBlocks))
		}
		for i, b := range man.CIDRBlocks {
			p, err := netip.ParsePrefix(b.CIDRBlock)
			if err != nil || !p.Addr().Is4() || p.Masked() != p {
				return bad(fmt.Sprintf("masterAuthorizedNetworks.cidrBlocks[%d].cidrBlock", i), "InvalidCIDR", "%q is not an IPv4 CIDR block such as 203.0.113.0/24", b.CIDRBlock)
			}
		}
	}
	region := regionOf(location(cfg))
	seenZone := map[string]bool{}
	for i, z := range cfg.Locations {
		if !isZone(z) || regionOf(z) != region || seenZone[z] {
			return bad(fmt.Sprintf("locations[%d]", i), "InvalidLocation", "%q is not a distinct zone of region %s", z, region)
		}
		seenZone[z] = true
	}
	if cfg.Zone != "" && len(cfg.Locations) > 0 && !seenZone[cfg.Zone] {
		return bad("locations", v1.ReasonInvalidLocation, "the locations of a zonal cluster must include its zone %s", cfg.Zone)
	}
	if mw := cfg.MaintenanceWindow; mw != nil && *mw != "" && !windowRE.MatchString(*mw) {
		return bad("maintenanceWindow", v1.ReasonInvalidMaintenanceWindow, "%q is not a start time \"HH:MM\" (UTC), or \"\" for none", *mw)
	}
	seen := map[string]bool{}
	for _, np := range cfg.NodePools {
		f := "nodePools[" + np.Name + "]"
		switch {
		case seen[np.Name]:
			return bad(f+".name", v1.ReasonDuplicateNodePool, "node pool %q appears twice; names must be unique", np.Name)
		case !nameRE.MatchString(np.Name):
			return bad(f+".name", v1.ReasonInvalidName, "%q is not a node pool name: lowercase letters, digits and '-', starting with a letter, at most 40 characters", np.Name)
		}
		seen[np.Name] = true
		if np.InitialNodeCount != nil && *np.InitialNodeCount < 0 {
			return bad(f+".initialNodeCount", v1.ReasonInvalidScaling, "must be 0 or more, got %d", *np.InitialNodeCount)
		}
		if a := np.Autoscaling; a != nil {
			if a.MinNodeCount != nil && *a.MinNodeCount < 0 {
				return bad(f+".autoscaling.minNodeCount", v1.ReasonInvalidScaling, "must be 0 or more, got %d", *a.MinNodeCount)
			}
			if ptr.Deref(a.Enabled, false) && a.MaxNodeCount != nil && *a.MaxNodeCount < 1 {
				return bad(f+".autoscaling.maxNodeCount", v1.ReasonInvalidScaling, "must be 1 or more when autoscaling is enabled, got %d", *a.MaxNodeCount)
			}
			if a.MinNodeCount != nil && a.MaxNodeCount != nil && *a.MinNodeCount > *a.MaxNodeCount {
				return bad(f+".autoscaling.minNodeCount", v1.ReasonInvalidScaling, "minNodeCount %d is larger than maxNodeCount %d", *a.MinNodeCount, *a.MaxNodeCount)
			}
		}
		if np.Version != nil {
			nv, ok := parseVersion(*np.Version)
			if !ok {
				return bad(f+".version", v1.ReasonInvalidVersion, "%q is not a GKE version such as \"1.33\"", *np.Version)
			}
			if cfg.KubernetesVersion != nil && nv.minorNewer(master) {
				return bad(f+".version", v1.ReasonNodeVersionTooNew, "node pool version %s is newer than the master's %s: upgrade the master first", *np.Version, *cfg.KubernetesVersion)
			}
		}
		if nc := np.Config; nc != nil {
			if nc.DiskSizeGb != nil && *nc.DiskSizeGb < 10 {
				return bad(f+".config.diskSizeGb", v1.ReasonInvalidDiskSize, "must be at least 10 GB, got %d", *nc.DiskSizeGb)
			}
			if err := validateLabels(f+".config.labels", nc.Labels); err != nil {
				return err
			}
			for i, t := range nc.Taints {
				if t.Key == "" || !slices.Contains(TaintEffects, t.Effect) {
					return bad(fmt.Sprintf("%s.config.taints[%d]", f, i), "InvalidTaint", "a taint needs a key and an effect among %s", strings.Join(TaintEffects, ", "))
				}
			}
		}
	}
	return nil
}

func validateLabels(field string, labels map[string]string) error {
	if len(labels) > 64 {
		return &hosted.FieldError{Field: "gkeConfig." + field, Reason: v1.ReasonInvalidLabel, Message: fmt.Sprintf("at most 64 labels are allowed, got %d", len(labels))}
	}
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) {
			return &hosted.FieldError{Field: "gkeConfig." + field + "[" + k + "]", Reason: v1.ReasonInvalidLabel,
				Message: fmt.Sprintf("label %q=%q: keys start with a lowercase letter; keys and values hold only lowercase letters, digits, '_' and '-' (at most 63 characters)", k, v)}
		}
	}
	return nil
}

// Allowed values.
var (
	LoggingServices    = []string{"logging.googleapis.com/kubernetes", "none"}
	MonitoringServices = []string{"monitoring.googleapis.com/kubernetes", "none"}
	TaintEffects       = []string{"NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"}
)

var (
	nameRE       = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$`)
	regionRE     = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+(?:-[a-z])?$`)
	windowRE     = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	labelKeyRE   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
	versionRE    = regexp.MustCompile(`^1\.(\d+)(?:\.(\d+)(?:-gke\.(\d+))?)?$`)
)

// Regions are the Google Cloud regions with GKE. A region missing here is refused
// (UnknownRegion) rather than sent: a mistyped one would otherwise be found only by the create.
var Regions = []string{
	"africa-south1", "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3", "asia-south1",
	"asia-south2", "asia-southeast1", "asia-southeast2", "australia-southeast1", "australia-southeast2", "europe-central2",
	"europe-north1", "europe-north2", "europe-southwest1", "europe-west1", "europe-west2", "europe-west3", "europe-west4",
	"europe-west6", "europe-west8", "europe-west9", "europe-west10", "europe-west12", "me-central1", "me-central2", "me-west1",
	"northamerica-northeast1", "northamerica-northeast2", "northamerica-south1", "southamerica-east1", "southamerica-west1",
	"us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4",
}

// zoneLetterRE: Google Cloud zones end in a letter from a to f.
var zoneLetterRE = regexp.MustCompile(`-[a-f]$`)

// isZone tells a zone ("us-central1-a") from a region ("us-central1").
func isZone(l string) bool { return strings.Count(l, "-") == 2 }

func regionOf(l string) string {
	if isZone(l) {
		return l[:strings.LastIndexByte(l, '-')]
	}
	return l
}

// version is a parsed GKE version; a version given as "1.33" has only a minor.
type version struct{ minor int }

func parseVersion(s string) (version, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return version{}, false
	}
	n, err := strconv.Atoi(m[1])
	return version{minor: n}, err == nil
}

func (v version) minorNewer(o version) bool { return v.minor > o.minor }

// sameVersion reports whether the running version actual is what the config's want asks for:
// equal, or want is a less precise form of it ("1.33" or "1.33.5" for "1.33.5-gke.1162000").
func sameVersion(actual, want string) bool {
	return actual == want || strings.HasPrefix(actual, want+".") || strings.HasPrefix(actual, want+"-")
}

// shownVersion is the running version in the config's precision when they agree, so that a
// config saying "1.33" is in sync with a master running 1.33.5-gke.1162000.
func shownVersion(actual string, want *string) *string {
	if want != nil && sameVersion(actual, *want) {
		return ptr.To(*want)
	}
	return ptr.To(actual)
}

// CreateDefaults implements hosted.Provider: what GKE itself would pick, made explicit so every
// field of a cluster drover creates is managed. Regional clusters get the locations GKE picks:
// the empty default is adopted from GKE after creation.
func (Provider) CreateDefaults(config map[string]any) (map[string]any, error) {
	cfg := &v1.GKEClusterConfig{}
	if err := hosted.FromTree(config, cfg); err != nil {
		return nil, err
	}
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.LoggingService = orDefault(cfg.LoggingService, DefaultLoggingService)
	cfg.MonitoringService = orDefault(cfg.MonitoringService, DefaultMonitoringService)
	cfg.Network = orDefault(cfg.Network, "default")
	cfg.Subnetwork = orDefault(cfg.Subnetwork, "default")
	if cfg.MasterAuthorizedNetworks == nil {
		cfg.MasterAuthorizedNetworks = &v1.GKEMasterAuthorizedNetworks{}
	}
	cfg.MasterAuthorizedNetworks.Enabled = orDefault(cfg.MasterAuthorizedNetworks.Enabled, false)
	if cfg.MasterAuthorizedNetworks.CIDRBlocks == nil {
		cfg.MasterAuthorizedNetworks.CIDRBlocks = []v1.GKECIDRBlock{}
	}
	if cfg.Locations == nil {
		cfg.Locations = []string{}
		if cfg.Zone != "" {
			cfg.Locations = []string{cfg.Zone}
		}
	}
	cfg.MaintenanceWindow = orDefault(cfg.MaintenanceWindow, "")
	if cfg.NodePools == nil {
		cfg.NodePools = []v1.GKENodePool{}
	}
	for i := range cfg.NodePools {
		poolDefaults(cfg, &cfg.NodePools[i])
	}
	return hosted.ToTree(cfg)
}

func poolDefaults(cfg *v1.GKEClusterConfig, np *v1.GKENodePool) {
	np.InitialNodeCount = orDefault(np.InitialNodeCount, DefaultNodeCount)
	if np.Version == nil {
		np.Version = cfg.KubernetesVersion
	}
	if np.Autoscaling == nil {
		np.Autoscaling = &v1.GKENodePoolAutoscaling{}
	}
	np.Autoscaling.Enabled = orDefault(np.Autoscaling.Enabled, false)
	np.Autoscaling.MinNodeCount = orDefault(np.Autoscaling.MinNodeCount, 0)
	np.Autoscaling.MaxNodeCount = orDefault(np.Autoscaling.MaxNodeCount, 0)
	if np.Management == nil {
		np.Management = &v1.GKENodePoolManagement{}
	}
	np.Management.AutoRepair = orDefault(np.Management.AutoRepair, true)
	np.Management.AutoUpgrade = orDefault(np.Management.AutoUpgrade, true)
	if np.Config == nil {
		np.Config = &v1.GKENodeConfig{}
	}
	nc := np.Config
	nc.MachineType = orDefault(nc.MachineType, DefaultMachineType)
	nc.DiskSizeGb = orDefault(nc.DiskSizeGb, DefaultDiskSizeGb)
	nc.DiskType = orDefault(nc.DiskType, DefaultDiskType)
	nc.ImageType = orDefault(nc.ImageType, DefaultImageType)
	nc.Preemptible = orDefault(nc.Preemptible, false)
	nc.ServiceAccount = orDefault(nc.ServiceAccount, "default")
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	if nc.Taints == nil {
		nc.Taints = []v1.GKENodeTaint{}
	}
	if nc.Tags == nil {
		nc.Tags = []string{}
	}
	if nc.OAuthScopes == nil {
		nc.OAuthScopes = slices.Clone(DefaultOAuthScopes)
	}
}

func orDefault[T any](p *T, def T) *T {
	if p != nil {
		return p
	}
	return &def
}
