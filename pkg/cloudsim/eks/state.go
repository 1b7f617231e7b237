package eks

import (
	"maps"

	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"slices"
	"sync"
	"time"
)

// Cluster, node group and update status values, as EKS spells them.
const (
	StatusCreating = "CREATING"
	StatusActive   = "ACTIVE"
	StatusUpdating = "UPDATING"
	StatusDeleting = "DELETING"

	UpdateInProgress = "InProgress"
	UpdateSuccessful = "Successful"
)

// logTypes are the control-plane log types in EKS's order; a cluster keeps the enabled ones
// as a bit mask over this list.
var logTypes = []string{"api", "audit", "authenticator", "controllerManager", "scheduler"}

// ClusterState is a deep copy of one simulated cluster, for tests and the simulator command.
type ClusterState struct {
	Region, Name, ARN     string
	Version               string
	PlatformVersion       string
	Status                string
	Endpoint              string
	RoleARN               string
	SubnetIDs             []string
	SecurityGroupIDs      []string
	VpcID                 string
	EndpointPublicAccess  bool
	EndpointPrivateAccess bool
	PublicAccessCIDRs     []string
	// LoggingTypes are the enabled control-plane log types.
	LoggingTypes []string
	Tags         map[string]string
	CreatedAt    time.Time
	// Nodegroups are sorted by name.
	Nodegroups []NodegroupState
	// Updates are the cluster's own updates, oldest first.
	Updates []UpdateState
}

// NodegroupState is a deep copy of one managed node group.
type NodegroupState struct {
	Name, ARN      string
	Version        string
	ReleaseVersion string
	Status         string
	CapacityType   string
	AMIType        string
	NodeRole       string
	InstanceTypes  []string
	Subnets        []string
	// DiskSize is 0 when the node group uses a launch template.
	DiskSize                      int32
	MinSize, MaxSize, DesiredSize int32
	Labels                        map[string]string
	Taints                        []Taint
	Tags                          map[string]string
	LaunchTemplate                *LaunchTemplate
	CreatedAt, ModifiedAt         time.Time
	// Updates are the node group's updates, oldest first.
	Updates []UpdateState
}

// Taint is a Kubernetes taint of a node group; Effect is NO_SCHEDULE, NO_EXECUTE or
// PREFER_NO_SCHEDULE.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// LaunchTemplate identifies the EC2 launch template of a node group.
type LaunchTemplate struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	ID      string `json:"id,omitempty"`
}

// UpdateState is one EKS update (a version or configuration change) of a cluster or node group.
type UpdateState struct {
	ID, Type, Status string
	Params           []UpdateParam
	CreatedAt        time.Time
}

// UpdateParam is one parameter of an update, as EKS reports it.
type UpdateParam struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// cluster is the simulator's record of one cluster. Every field is guarded by mu. Slices and
// maps are never modified in place, only replaced, so a response can be encoded from them
// after mu is released.
type cluster struct {
	mu sync.Mutex

	region, name, arn string
	endpoint, oidcID  string
	version           string
	status            string
	roleARN           string
	subnets, sgs      []string
	vpcID, clusterSG  string
	publicAccess      bool
	privateAccess     bool
	publicCIDRs       []string
	logging           uint8 // bit i set = logTypes[i] enabled
	tags              map[string]string
	createToken       string
	createdAt         time.Time
	// doneAt ends the CREATING or DELETING transition.
	doneAt time.Time
	// gone is set once a deletion has finished; the record is then dropped from the store.
	gone bool

	updates    []*update
	pending    *update
	nodegroups map[string]*nodegroup

	// authMode is the accessConfig.authenticationMode; bootstrapAdmin its
	// bootstrapClusterCreatorAdminPermissions.
	authMode       string
	bootstrapAdmin bool
	// access holds the access entries by principal ARN.
	access map[string]*accessEntry
	// backend is the real API server serving the cluster, if any.
	backend *simcore.Backend
}

type nodegroup struct {
	name, arn, uuid       string
	version, release      string
	status                string
	capacityType, amiType string
	nodeRole              string
	instanceTypes         []string
	subnets               []string
	diskSize              int32
	minSize, maxSize      int32
	desiredSize           int32
	labels, tags          map[string]string
	taints                []Taint
	launchTemplate        *LaunchTemplate
	createToken           string
	createdAt, modifiedAt time.Time
	doneAt                time.Time

	updates []*update
	pending *update
}

// update is an EKS update. While it is InProgress, apply holds the change it makes when it
// completes; the owner's record shows the old values until then, as EKS does.
type update struct {
	id, typ, status string
	params          []UpdateParam
	token           string
	createdAt       time.Time
	// busyAt is when the owner starts reporting UPDATING: EKS keeps showing a cluster ACTIVE
	// for a few seconds after accepting an update (Options.UpdateStatusLag).
	busyAt time.Time
	endsAt time.Time
	apply  func(now time.Time)
}

// settle applies every transition of c (and its node groups) that has ended by now. It is
// the whole state machine: nothing runs in the background.
func (c *cluster) settle(now time.Time) {
	switch {
	case c.status == StatusCreating && !now.Before(c.doneAt):
		c.status = StatusActive
	case c.status == StatusDeleting && !now.Before(c.doneAt):
		c.gone = true
		return
	}
	if u := c.pending; u != nil {
		switch {
		case !now.Before(u.endsAt):
			u.finish(now)
			c.pending = nil
			if c.status == StatusUpdating {
				c.status = StatusActive
			}
		case c.status == StatusActive && !now.Before(u.busyAt):
			c.status = StatusUpdating
		}
	}
	for name, ng := range c.nodegroups {
		if ng.settle(now) {
			delete(c.nodegroups, name)
		}
	}
}

// settle applies ng's finished transitions and reports whether its deletion has finished.
func (ng *nodegroup) settle(now time.Time) (gone bool) {
	switch {
	case ng.status == StatusCreating && !now.Before(ng.doneAt):
		ng.status, ng.modifiedAt = StatusActive, ng.doneAt
	case ng.status == StatusDeleting && !now.Before(ng.doneAt):
		return true
	}
	if u := ng.pending; u != nil {
		switch {
		case !now.Before(u.endsAt):
			u.finish(now)
			ng.pending = nil
			if ng.status == StatusUpdating {
				ng.status = StatusActive
			}
			ng.modifiedAt = u.endsAt
		case ng.status == StatusActive && !now.Before(u.busyAt):
			ng.status = StatusUpdating
		}
	}
	return false
}

func (u *update) finish(now time.Time) {
	if u.apply != nil {
		u.apply(now)
		u.apply = nil
	}
	u.status = UpdateSuccessful
}

// findUpdate returns the update with the given id or client request token.
func findUpdate(us []*update, id, token string) *update {
	for _, u := range us {
		if (id != "" && u.id == id) || (token != "" && u.token == token) {
			return u
		}
	}
	return nil
}

func (c *cluster) loggingTypes() []string {
	var out []string
	for i, t := range logTypes {
		if c.logging&(1<<i) != 0 {
			out = append(out, t)
		}
	}
	return out
}

// snapshot returns a deep copy of c; c must be locked and settled.
func (c *cluster) snapshot() ClusterState {
	st := ClusterState{
		Region: c.region, Name: c.name, ARN: c.arn,
		Version: c.version, PlatformVersion: platformVersion, Status: c.status,
		Endpoint: c.endpoint, RoleARN: c.roleARN,
		SubnetIDs: slices.Clone(c.subnets), SecurityGroupIDs: slices.Clone(c.sgs), VpcID: c.vpcID,
		EndpointPublicAccess: c.publicAccess, EndpointPrivateAccess: c.privateAccess,
		PublicAccessCIDRs: slices.Clone(c.publicCIDRs),
		LoggingTypes:      c.loggingTypes(),
		Tags:              maps.Clone(c.tags),
		CreatedAt:         c.createdAt,
		Updates:           snapshotUpdates(c.updates),
	}
	for _, name := range slices.Sorted(maps.Keys(c.nodegroups)) {
		st.Nodegroups = append(st.Nodegroups, c.nodegroups[name].snapshot())
	}
	return st
}

func (ng *nodegroup) snapshot() NodegroupState {
	st := NodegroupState{
		Name: ng.name, ARN: ng.arn, Version: ng.version, ReleaseVersion: ng.release, Status: ng.status,
		CapacityType: ng.capacityType, AMIType: ng.amiType, NodeRole: ng.nodeRole,
		InstanceTypes: slices.Clone(ng.instanceTypes), Subnets: slices.Clone(ng.subnets), DiskSize: ng.diskSize,
		MinSize: ng.minSize, MaxSize: ng.maxSize, DesiredSize: ng.desiredSize,
		Labels: maps.Clone(ng.labels), Taints: slices.Clone(ng.taints), Tags: maps.Clone(ng.tags),
		CreatedAt: ng.createdAt, ModifiedAt: ng.modifiedAt,
		Updates: snapshotUpdates(ng.updates),
	}
	if ng.launchTemplate != nil {
		lt := *ng.launchTemplate
		st.LaunchTemplate = &lt
	}
	return st
}

func snapshotUpdates(us []*update) []UpdateState {
	if len(us) == 0 {
		return nil
	}
	out := make([]UpdateState, len(us))
	for i, u := range us {
		out[i] = UpdateState{ID: u.id, Type: u.typ, Status: u.status, Params: slices.Clone(u.params), CreatedAt: u.createdAt}
	}
	return out
}
