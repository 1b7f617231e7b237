// Package eks is the Amazon EKS provider of the hosted-cluster sync engine, built on
// aws-sdk-go-v2's eks client.
package eks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Credential Secret keys.
const (
	KeyAccessKeyID     = "accessKeyID"
	KeySecretAccessKey = "secretAccessKey"
	KeySessionToken    = "sessionToken"
	KeyEndpoint        = "endpoint"
)

// Provider is the EKS provider.
type Provider struct {
	// RetryMaxAttempts bounds the SDK's own retries (0: the SDK default).
	RetryMaxAttempts int
}

var _ hosted.Provider = Provider{}

var schema = merge.Schema{
	Maps:       []string{"tags", "nodeGroups.*.labels", "nodeGroups.*.tags"},
	NamedLists: map[string]string{"nodeGroups": "name"},
	Sets:       []string{"loggingTypes", "publicAccessSources", "subnets", "securityGroups", "nodeGroups.*.subnets"},
}

// Name implements hosted.Provider.
func (Provider) Name() string { return "eks" }

// Matches implements hosted.Provider.
func (Provider) Matches(c *v1.Cluster) bool { return c.Spec.EKSConfig != nil }

// Schema implements hosted.Provider.
func (Provider) Schema() merge.Schema { return schema }

var slots = hosted.Slots[v1.EKSClusterConfig]{
	Config: func(c *v1.Cluster) **v1.EKSClusterConfig { return &c.Spec.EKSConfig },
	Status: func(c *v1.Cluster, create bool) (**v1.EKSClusterConfig, **v1.EKSClusterConfig) {
		if c.Status.EKSStatus == nil {
			if !create {
				return nil, nil
			}
			c.Status.EKSStatus = &v1.EKSStatus{}
		}
		return &c.Status.EKSStatus.UpstreamSpec, &c.Status.EKSStatus.AppliedSpec
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
		st := c.Status.EKSStatus
		st.ARN, st.Endpoint, st.Status = obs.Details["arn"], obs.Details["endpoint"], obs.Status
	}
	return nil
}

// Imported implements hosted.Provider.
func (Provider) Imported(c *v1.Cluster) bool { return c.Spec.EKSConfig.Imported }

// CredentialSecret implements hosted.Provider.
func (Provider) CredentialSecret(c *v1.Cluster) string { return c.Spec.EKSConfig.CredentialSecret }

// RateLimitKey implements hosted.Provider: EKS quotas are per account and region; the access
// key stands in for the account.
func (Provider) RateLimitKey(c *v1.Cluster, s *corev1.Secret) string {
	return "eks/" + string(s.Data[KeyAccessKeyID]) + "/" + c.Spec.EKSConfig.Region
}

// CreateBase implements hosted.Provider: CreateCluster sets everything but the node groups,
// which are created once the cluster is active.
func (Provider) CreateBase(config map[string]any) map[string]any {
	base := make(map[string]any, len(config))
	for k, v := range config {
		if k != "nodeGroups" {
			base[k] = v
		}
	}
	return base
}

// Connect implements hosted.Provider.
func (p Provider) Connect(_ context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (hosted.Session, error) {
	var missing []string
	for _, k := range []string{KeyAccessKeyID, KeySecretAccessKey} {
		if len(s.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, &hosted.FieldError{Field: "eksConfig.credentialSecret", Reason: v1.ReasonSecretIncomplete,
			Message: fmt.Sprintf("Secret %s/%s lacks key(s) %s: add them (keys: accessKeyID, secretAccessKey, optional sessionToken, endpoint).", s.Namespace, s.Name, strings.Join(missing, ", "))}
	}
	// SDK clients are reused while the Secret is unchanged (hosted.Clients): building one
	// resolves its whole middleware configuration, which costs more than a Describe call.
	endpoint := strings.TrimSpace(string(s.Data[KeyEndpoint]))
	region := c.Spec.EKSConfig.Region
	key := hosted.NewClientKey("eks", s, fmt.Sprintf("%s|%s|%d", region, endpoint, p.RetryMaxAttempts), transport)
	client, _ := hosted.CachedClient(hosted.Clients, key, func() (*awseks.Client, error) {
		cfg := aws.Config{
			Region:      region,
			Credentials: credentials.NewStaticCredentialsProvider(string(s.Data[KeyAccessKeyID]), string(s.Data[KeySecretAccessKey]), string(s.Data[KeySessionToken])),
			// No request waits for ever (the transport also bounds the wait for headers).
			HTTPClient: &http.Client{Transport: transport, Timeout: hosted.RequestTimeout},
		}
		if p.RetryMaxAttempts > 0 {
			cfg.RetryMaxAttempts = p.RetryMaxAttempts
		}
		return awseks.NewFromConfig(cfg, func(o *awseks.Options) {
			if endpoint != "" {
				o.BaseEndpoint = aws.String(endpoint)
			}
		}), nil
	})
	return &session{api: client, cfg: c.Spec.EKSConfig}, nil
}

// Validate implements hosted.Provider: the config alone, before anything is sent.
func (Provider) Validate(c *v1.Cluster) error {
	cfg := c.Spec.EKSConfig
	bad := func(field, reason, format string, args ...any) error {
		return &hosted.FieldError{Field: "eksConfig." + field, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case cfg.DisplayName == "":
		return bad("displayName", v1.ReasonMissingField, "the EKS cluster name is required")
	case cfg.Region == "":
		return bad("region", v1.ReasonMissingField, "the AWS region is required, e.g. us-west-2")
	case !slices.Contains(Regions, cfg.Region):
		return bad("region", v1.ReasonUnknownRegion, "%q is not an AWS region that has EKS (e.g. us-west-2, eu-central-1)", cfg.Region)
	case cfg.CredentialSecret == "":
		return bad("credentialSecret", v1.ReasonMissingField, "the name of the credential Secret is required")
	}
	if cfg.KubernetesVersion != nil {
		if _, ok := minor(*cfg.KubernetesVersion); !ok {
			return bad("kubernetesVersion", v1.ReasonInvalidVersion, "%q is not a Kubernetes minor version such as \"1.33\"", *cfg.KubernetesVersion)
		}
	}
	if !cfg.Imported {
		switch {
		case cfg.KubernetesVersion == nil:
			return bad("kubernetesVersion", v1.ReasonMissingField, "required to create a cluster, e.g. \"1.33\"")
		case cfg.ServiceRole == nil || *cfg.ServiceRole == "":
			return bad("serviceRole", v1.ReasonMissingField, "required to create a cluster: the ARN of the EKS cluster IAM role")
		case len(cfg.Subnets) < 2:
			return bad("subnets", v1.ReasonMissingField, "required to create a cluster: at least two subnet IDs in different availability zones")
		}
	}
	if cfg.PublicAccess != nil && cfg.PrivateAccess != nil && !*cfg.PublicAccess && !*cfg.PrivateAccess {
		return bad("publicAccess", v1.ReasonNoEndpointAccess, "publicAccess and privateAccess cannot both be false: the API server would be unreachable")
	}
	for i, cidr := range cfg.PublicAccessSources {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return bad(fmt.Sprintf("publicAccessSources[%d]", i), "InvalidCIDR", "%q is not a CIDR such as 203.0.113.0/24", cidr)
		}
	}
	for _, t := range cfg.LoggingTypes {
		if !slices.Contains(LogTypes, t) {
			return bad("loggingTypes", v1.ReasonInvalidLogType, "%q is not one of %s", t, strings.Join(LogTypes, ", "))
		}
	}
	seen := map[string]bool{}
	for _, ng := range cfg.NodeGroups {
		f := "nodeGroups[" + ng.Name + "]"
		if seen[ng.Name] {
			return bad(f+".name", v1.ReasonDuplicateNodeGroup, "node group %q appears twice; names must be unique", ng.Name)
		}
		seen[ng.Name] = true
		if err := validateScaling(f, ng.MinSize, ng.DesiredSize, ng.MaxSize); err != nil {
			return err
		}
		if ng.Version != nil {
			nv, ok := minor(*ng.Version)
			if !ok {
				return bad(f+".version", v1.ReasonInvalidVersion, "%q is not a Kubernetes minor version such as \"1.33\"", *ng.Version)
			}
			if cfg.KubernetesVersion != nil {
				if cv, _ := minor(*cfg.KubernetesVersion); nv > cv {
					return bad(f+".version", v1.ReasonNodeVersionTooNew, "node group version %s is newer than the cluster's %s: a node group never runs a newer version than its cluster (to upgrade, raise eksConfig.kubernetesVersion first; EKS cannot downgrade a cluster)", *ng.Version, *cfg.KubernetesVersion)
				}
			}
		}
	}
	return nil
}

func validateScaling(f string, minS, desired, maxS *int32) error {
	bad := func(field, format string, args ...any) error {
		return &hosted.FieldError{Field: "eksConfig." + f + "." + field, Reason: v1.ReasonInvalidScaling, Message: fmt.Sprintf(format, args...)}
	}
	if minS != nil && *minS < 0 {
		return bad("minSize", "must be 0 or more, got %d", *minS)
	}
	if maxS != nil && *maxS < 1 {
		return bad("maxSize", "must be 1 or more, got %d", *maxS)
	}
	if minS != nil && maxS != nil && *minS > *maxS {
		return bad("minSize", "minSize %d is larger than maxSize %d", *minS, *maxS)
	}
	if desired != nil && minS != nil && *desired < *minS {
		return bad("desiredSize", "desiredSize %d is below minSize %d", *desired, *minS)
	}
	if desired != nil && maxS != nil && *desired > *maxS {
		return bad("desiredSize", "desiredSize %d is above maxSize %d", *desired, *maxS)
	}
	return nil
}

var versionRE = regexp.MustCompile(`^1\.(\d+)$`)

// minor parses "1.33" into 33.
func minor(v string) (int, bool) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// LogTypes are the EKS control-plane log types.
var LogTypes = []string{"api", "audit", "authenticator", "controllerManager", "scheduler"}

// Regions are the AWS regions with EKS.
var Regions = []string{
	"us-east-1", "us-east-2", "us-west-1", "us-west-2", "af-south-1", "ap-east-1", "ap-east-2",
	"ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
	"ap-southeast-5", "ap-southeast-7", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
	"ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "eu-west-3",
	"eu-south-1", "eu-south-2", "eu-north-1", "il-central-1", "me-south-1", "me-central-1",
	"mx-central-1", "sa-east-1", "us-gov-east-1", "us-gov-west-1", "cn-north-1", "cn-northwest-1",
}

// CreateDefaults implements hosted.Provider: what EKS itself would pick, made explicit so every
// field of a cluster drover creates is managed.
func (Provider) CreateDefaults(config map[string]any) (map[string]any, error) {
	cfg := &v1.EKSClusterConfig{}
	if err := hosted.FromTree(config, cfg); err != nil {
		return nil, err
	}
	if cfg.PublicAccess == nil {
		cfg.PublicAccess = ptr.To(true)
	}
	if cfg.PrivateAccess == nil {
		cfg.PrivateAccess = ptr.To(false)
	}
	if cfg.PublicAccessSources == nil && *cfg.PublicAccess {
		cfg.PublicAccessSources = []string{"0.0.0.0/0"}
	}
	if cfg.LoggingTypes == nil {
		cfg.LoggingTypes = []string{}
	}
	if cfg.Tags == nil {
		cfg.Tags = map[string]string{}
	}
	if cfg.SecurityGroups == nil {
		cfg.SecurityGroups = []string{}
	}
	if cfg.NodeGroups == nil {
		cfg.NodeGroups = []v1.EKSNodeGroup{}
	}
	for i := range cfg.NodeGroups {
		ng := &cfg.NodeGroups[i]
		if ng.InstanceType == nil {
			ng.InstanceType = ptr.To("m5.large")
		}
		if ng.DiskSize == nil {
			ng.DiskSize = ptr.To[int32](20)
		}
		if ng.DesiredSize == nil {
			ng.DesiredSize = ptr.To[int32](2)
		}
		if ng.MinSize == nil {
			ng.MinSize = ptr.To(min(*ng.DesiredSize, 1))
		}
		if ng.MaxSize == nil {
			ng.MaxSize = ptr.To(max(*ng.DesiredSize, 1))
		}
		if ng.Labels == nil {
			ng.Labels = map[string]string{}
		}
		if ng.Tags == nil {
			ng.Tags = map[string]string{}
		}
		if ng.Version == nil {
			ng.Version = cfg.KubernetesVersion
		}
		if ng.Subnets == nil {
			ng.Subnets = slices.Clone(cfg.Subnets)
		}
	}
	return hosted.ToTree(cfg)
}
