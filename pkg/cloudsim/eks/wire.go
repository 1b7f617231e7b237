package eks

import (
	"strconv"
	"time"
)

// The types below are the EKS REST-JSON wire shapes (member names from the SDK's schemas).
// Responses are built from them and encoded with encoding/json; requests are decoded into
// them, with pointers where the simulator must tell "absent" from a zero value.

// epoch is a timestamp in the restJson1 default format: seconds since the epoch, as a number.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return strconv.AppendFloat(nil, float64(ms)/1000, 'f', 3, 64), nil
}

type clusterJSON struct {
	Name                    string                  `json:"name"`
	Arn                     string                  `json:"arn"`
	CreatedAt               epoch                   `json:"createdAt"`
	Version                 string                  `json:"version"`
	Endpoint                string                  `json:"endpoint,omitempty"`
	RoleArn                 string                  `json:"roleArn"`
	ResourcesVpcConfig      vpcConfigJSON           `json:"resourcesVpcConfig"`
	KubernetesNetworkConfig kubernetesNetworkConfig `json:"kubernetesNetworkConfig"`
	Logging                 *loggingJSON            `json:"logging"`
	Identity                *identityJSON           `json:"identity,omitempty"`
	Status                  string                  `json:"status"`
	CertificateAuthority    *certificateJSON        `json:"certificateAuthority,omitempty"`
	ClientRequestToken      string                  `json:"clientRequestToken,omitempty"`
	PlatformVersion         string                  `json:"platformVersion"`
	Tags                    map[string]string       `json:"tags"`
	Health                  healthJSON              `json:"health"`
	AccessConfig            *accessConfigJSON       `json:"accessConfig,omitempty"`
}

type accessConfigJSON struct {
	BootstrapClusterCreatorAdminPermissions *bool  `json:"bootstrapClusterCreatorAdminPermissions,omitempty"`
	AuthenticationMode                      string `json:"authenticationMode,omitempty"`
}

type vpcConfigJSON struct {
	SubnetIds              []string `json:"subnetIds"`
	SecurityGroupIds       []string `json:"securityGroupIds"`
	ClusterSecurityGroupID string   `json:"clusterSecurityGroupId,omitempty"`
	VpcID                  string   `json:"vpcId"`
	EndpointPublicAccess   bool     `json:"endpointPublicAccess"`
	EndpointPrivateAccess  bool     `json:"endpointPrivateAccess"`
	PublicAccessCidrs      []string `json:"publicAccessCidrs"`
}

type kubernetesNetworkConfig struct {
	ServiceIpv4Cidr string `json:"serviceIpv4Cidr"`
	IPFamily        string `json:"ipFamily"`
}

var defaultNetworkConfig = kubernetesNetworkConfig{ServiceIpv4Cidr: "10.100.0.0/16", IPFamily: "ipv4"}

type loggingJSON struct {
	ClusterLogging []logSetupJSON `json:"clusterLogging"`
}

type logSetupJSON struct {
	Types   []string `json:"types"`
	Enabled *bool    `json:"enabled,omitempty"`
}

// loggingByMask holds the logging block for each of the 32 possible sets of enabled log
// types, so describing a cluster allocates nothing for it.
var loggingByMask = func() (out [32]*loggingJSON) {
	on, off := true, false
	for m := range out {
		var en, dis []string
		for i, t := range logTypes {
			if m&(1<<i) != 0 {
				en = append(en, t)
			} else {
				dis = append(dis, t)
			}
		}
		l := &loggingJSON{}
		if len(en) > 0 {
			l.ClusterLogging = append(l.ClusterLogging, logSetupJSON{Types: en, Enabled: &on})
		}
		if len(dis) > 0 {
			l.ClusterLogging = append(l.ClusterLogging, logSetupJSON{Types: dis, Enabled: &off})
		}
		out[m] = l
	}
	return out
}()

type identityJSON struct {
	OIDC struct {
		Issuer string `json:"issuer"`
	} `json:"oidc"`
}

type certificateJSON struct {
	Data string `json:"data"`
}

type healthJSON struct {
	Issues []issueJSON `json:"issues"`
}

type issueJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

var emptyIssues = []issueJSON{}

type nodegroupJSON struct {
	NodegroupName  string            `json:"nodegroupName"`
	NodegroupArn   string            `json:"nodegroupArn"`
	ClusterName    string            `json:"clusterName"`
	Version        string            `json:"version"`
	ReleaseVersion string            `json:"releaseVersion"`
	CreatedAt      epoch             `json:"createdAt"`
	ModifiedAt     epoch             `json:"modifiedAt"`
	Status         string            `json:"status"`
	CapacityType   string            `json:"capacityType"`
	ScalingConfig  scalingJSON       `json:"scalingConfig"`
	InstanceTypes  []string          `json:"instanceTypes,omitempty"`
	Subnets        []string          `json:"subnets"`
	AmiType        string            `json:"amiType"`
	NodeRole       string            `json:"nodeRole"`
	Labels         map[string]string `json:"labels"`
	Taints         []Taint           `json:"taints,omitempty"`
	Resources      *resourcesJSON    `json:"resources,omitempty"`
	DiskSize       *int32            `json:"diskSize,omitempty"`
	Health         healthJSON        `json:"health"`
	UpdateConfig   updateConfigJSON  `json:"updateConfig"`
	LaunchTemplate *LaunchTemplate   `json:"launchTemplate,omitempty"`
	Tags           map[string]string `json:"tags"`
}

type scalingJSON struct {
	MinSize     int32 `json:"minSize"`
	MaxSize     int32 `json:"maxSize"`
	DesiredSize int32 `json:"desiredSize"`
}

type resourcesJSON struct {
	AutoScalingGroups []struct {
		Name string `json:"name"`
	} `json:"autoScalingGroups"`
}

type updateConfigJSON struct {
	MaxUnavailable int32 `json:"maxUnavailable"`
}

type updateJSON struct {
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	Type      string         `json:"type"`
	Params    []UpdateParam  `json:"params"`
	CreatedAt epoch          `json:"createdAt"`
	Errors    []errorDetails `json:"errors"`
}

type errorDetails struct {
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
}

var emptyErrors = []errorDetails{}

// Requests.

type vpcConfigRequest struct {
	SubnetIds             []string `json:"subnetIds"`
	SecurityGroupIds      []string `json:"securityGroupIds"`
	EndpointPublicAccess  *bool    `json:"endpointPublicAccess"`
	EndpointPrivateAccess *bool    `json:"endpointPrivateAccess"`
	PublicAccessCidrs     []string `json:"publicAccessCidrs"`
}

type createClusterRequest struct {
	Name               *string           `json:"name"`
	Version            *string           `json:"version"`
	RoleArn            *string           `json:"roleArn"`
	ResourcesVpcConfig *vpcConfigRequest `json:"resourcesVpcConfig"`
	Logging            *loggingJSON      `json:"logging"`
	ClientRequestToken string            `json:"clientRequestToken"`
	Tags               map[string]string `json:"tags"`
	AccessConfig       *accessConfigJSON `json:"accessConfig"`
}

type updateClusterConfigRequest struct {
	ResourcesVpcConfig *vpcConfigRequest `json:"resourcesVpcConfig"`
	Logging            *loggingJSON      `json:"logging"`
	ClientRequestToken string            `json:"clientRequestToken"`
	// Members the simulator does not model; present ones are rejected rather than ignored.
	AccessConfig            any `json:"accessConfig"`
	UpgradePolicy           any `json:"upgradePolicy"`
	ZonalShiftConfig        any `json:"zonalShiftConfig"`
	ComputeConfig           any `json:"computeConfig"`
	KubernetesNetworkConfig any `json:"kubernetesNetworkConfig"`
	StorageConfig           any `json:"storageConfig"`
	RemoteNetworkConfig     any `json:"remoteNetworkConfig"`
	DeletionProtection      any `json:"deletionProtection"`
}

type updateClusterVersionRequest struct {
	Version            *string `json:"version"`
	ClientRequestToken string  `json:"clientRequestToken"`
	Force              bool    `json:"force"`
}

type scalingRequest struct {
	MinSize     *int32 `json:"minSize"`
	MaxSize     *int32 `json:"maxSize"`
	DesiredSize *int32 `json:"desiredSize"`
}

type createNodegroupRequest struct {
	NodegroupName      *string           `json:"nodegroupName"`
	ScalingConfig      *scalingRequest   `json:"scalingConfig"`
	DiskSize           *int32            `json:"diskSize"`
	Subnets            []string          `json:"subnets"`
	InstanceTypes      []string          `json:"instanceTypes"`
	AmiType            *string           `json:"amiType"`
	NodeRole           *string           `json:"nodeRole"`
	Labels             map[string]string `json:"labels"`
	Taints             []Taint           `json:"taints"`
	Tags               map[string]string `json:"tags"`
	ClientRequestToken string            `json:"clientRequestToken"`
	LaunchTemplate     *LaunchTemplate   `json:"launchTemplate"`
	CapacityType       *string           `json:"capacityType"`
	Version            *string           `json:"version"`
	ReleaseVersion     *string           `json:"releaseVersion"`
}

type updateNodegroupConfigRequest struct {
	Labels *struct {
		AddOrUpdateLabels map[string]string `json:"addOrUpdateLabels"`
		RemoveLabels      []string          `json:"removeLabels"`
	} `json:"labels"`
	Taints *struct {
		AddOrUpdateTaints []Taint `json:"addOrUpdateTaints"`
		RemoveTaints      []Taint `json:"removeTaints"`
	} `json:"taints"`
	ScalingConfig      *scalingRequest `json:"scalingConfig"`
	ClientRequestToken string          `json:"clientRequestToken"`
}

type updateNodegroupVersionRequest struct {
	Version            *string         `json:"version"`
	ReleaseVersion     *string         `json:"releaseVersion"`
	LaunchTemplate     *LaunchTemplate `json:"launchTemplate"`
	Force              bool            `json:"force"`
	ClientRequestToken string          `json:"clientRequestToken"`
}

type tagResourceRequest struct {
	Tags map[string]string `json:"tags"`
}
