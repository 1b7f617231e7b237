// Package eks simulates the Amazon EKS control-plane API for drover's tests and the
// `drover cloudsim` command.
//
// A Server speaks EKS's REST-JSON wire protocol, so the unmodified aws-sdk-go-v2 eks client
// talks to it through an endpoint override:
//
//	client := eks.NewFromConfig(cfg, func(o *eks.Options) { o.BaseEndpoint = aws.String(url) })
//
// Requests must carry a valid SigV4 signature from one of Options.Credentials; the region of
// the credential scope selects the region the call is about. Supported operations: clusters
// (Create, Describe, List, Delete, UpdateClusterConfig for logging, endpoint access, public
// CIDRs, subnets and security groups, UpdateClusterVersion), node groups (Create, Describe,
// List, Delete, UpdateNodegroupConfig for scaling, labels and taints, UpdateNodegroupVersion),
// updates (ListUpdates, DescribeUpdate) and tags (TagResource, UntagResource,
// ListTagsForResource) on cluster and node group ARNs.
//
// State machines follow EKS: CREATING → ACTIVE and DELETING → gone after Options.Delay; an
// update is InProgress for Delay while its cluster or node group is UPDATING, and its new
// values appear when it completes; one update at a time per resource, a second one is refused
// with 409 ResourceInUseException. Options.UpdateStatusLag reproduces EKS reporting ACTIVE
// for a few seconds after accepting an update (of a cluster or a node group): only ListUpdates
// and DescribeUpdate show it meanwhile, as on EKS. Transitions are applied lazily when a resource
// is next touched (see simcore), so nothing runs in the background.
//
// Every call is counted per operation in Counters, and every authenticated call passes
// through the fault injector: ThrottlingException (429), ServerException (500), dropped
// connections and latency.
package eks
