// Package hosted is drover's provider-neutral hosted-cluster sync engine: one Reconciler for
// management.drover.io Clusters that, through a small Provider seam, creates, imports, updates,
// refreshes and deletes EKS, AKS and GKE clusters without losing changes made elsewhere.
//
// Each pass re-observes the provider, then runs the three-way merge of (last applied config,
// config, upstream): upstream-only changes are adopted into the config (or reverted under the
// enforce policy), drover-side changes are pushed field by field in the order the provider
// accepts, and a field changed on both sides goes drover's way with a Conflict condition.
package hosted

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Provider is what the engine needs from one cloud. Implementations are stateless; Connect
// returns a Session holding an SDK client built from the cluster's credentials.
type Provider interface {
	// Name is "eks", "aks" or "gke"; it prefixes field paths in messages (eksConfig.tags).
	Name() string
	// Matches reports whether the cluster's spec holds this provider's config.
	Matches(c *v1.Cluster) bool
	// Schema describes the config's maps, named lists and sets for the merge.
	Schema() merge.Schema
	// Config, Applied and Upstream return the config, the last applied config (nil if none) and
	// the last observed upstream state as JSON trees.
	Config(c *v1.Cluster) (map[string]any, error)
	Applied(c *v1.Cluster) (map[string]any, error)
	Upstream(c *v1.Cluster) (map[string]any, error)
	// SetConfig writes a config tree into the spec; SetStatus writes upstream and applied trees
	// (either may be nil to leave it unchanged) into the provider's status.
	SetConfig(c *v1.Cluster, config map[string]any) error
	SetStatus(c *v1.Cluster, upstream, applied map[string]any, obs *Observation) error
	// Imported reports whether the cluster was imported (drover never deletes it in the cloud).
	Imported(c *v1.Cluster) bool
	// CredentialSecret is the name of the credential Secret in the Cluster's namespace.
	CredentialSecret(c *v1.Cluster) string
	// RateLimitKey identifies the account and location whose API quota the calls count against.
	RateLimitKey(c *v1.Cluster, secret *corev1.Secret) string
	// Validate checks the config alone, before anything is sent.
	Validate(c *v1.Cluster) error
	// CreateDefaults fills the nil fields of a config for a cluster drover creates, so every
	// field of a created cluster is managed.
	CreateDefaults(config map[string]any) (map[string]any, error)
	// CreateBase is the applied base recorded right after a create call: the fields the create
	// call itself set (later work, e.g. node pools created afterwards, stays out of it).
	CreateBase(config map[string]any) map[string]any
	// Connect builds a session from the credential Secret.
	Connect(ctx context.Context, c *v1.Cluster, secret *corev1.Secret, transport Transport) (Session, error)
}

// LimitKey is the token bucket a cluster's calls draw from: the provider's quota key within the
// Cluster's namespace. The quota key comes from the spec or the credential Secret, which a
// tenant writes: shared across namespaces, one team naming another's project or subscription
// (with any credentials) would drain that team's bucket and delay its syncs.
func LimitKey(p Provider, c *v1.Cluster, secret *corev1.Secret) string {
	return p.RateLimitKey(c, secret) + "/namespace=" + c.Namespace
}

// Session talks to the provider for one cluster during one pass.
type Session interface {
	// Observe reads the cluster's real state. Exists is false when the provider does not know it.
	Observe(ctx context.Context, c *v1.Cluster) (*Observation, error)
	// Create starts creating the cluster from its config.
	Create(ctx context.Context, c *v1.Cluster, config map[string]any) (*Started, error)
	// CheckPush validates the changes to push against upstream (downgrades, immutable fields)
	// before anything is sent.
	CheckPush(push []merge.Change, effective, upstream map[string]any) error
	// Push makes the changes true: every synchronous call (tags) and at most one long-running
	// operation, in the order the provider accepts. It returns the changes it handled.
	Push(ctx context.Context, c *v1.Cluster, push []merge.Change, effective, upstream map[string]any) (done []merge.Change, started *Started, err error)
	// Delete starts deleting the cluster (dependents first). Gone reports it no longer exists.
	Delete(ctx context.Context, c *v1.Cluster, obs *Observation) (gone bool, err error)
}

// Started is a long-running operation drover started.
type Started struct {
	// ID identifies it for the next Observe (EKS update ID, ARM async URL, GKE operation name);
	// empty when the provider's resource status alone shows progress.
	ID string
	// What says what was started, for events and messages.
	What string
}

// Observation is the provider's state of one cluster.
type Observation struct {
	Exists bool
	// Upstream is the cluster in the config's shape, every supported field set.
	Upstream map[string]any
	// Status is the provider's own word for the cluster's state (ACTIVE, Succeeded, RUNNING...).
	Status string
	// Creating, Updating and Deleting come from the provider (cluster and pool states, running
	// operations), never from drover's memory of what it asked for.
	Creating, Updating, Deleting bool
	// Why says what is in progress, for the Updating condition.
	Why string
	// External describes an update in progress that drover did not start (the console,
	// Terraform): drover pushes nothing and reports the cluster not in sync until it ends, then
	// adopts its result. Updating is set with it.
	External string
	// Failed is set when the provider reports the cluster failed, with its message.
	Failed        bool
	FailedMessage string
	// Pending are the started operations still running (a subset of status.pendingOperations).
	Pending []string
	// FailedOps are started operations that ended in failure: ID → the provider's message.
	FailedOps map[string]string
	// Details are provider facts worth showing (ARN, endpoint).
	Details map[string]string
}

// Error kinds the engine reacts to.
var (
	// ErrBusy means the provider refused because another operation is running: wait, retry.
	ErrBusy = errors.New("provider busy with another operation")
	// ErrChangedSinceRead means the provider refused a conditional write (AKS If-Match, 412):
	// the resource changed since it was read. Not a failure: re-read, merge, write again.
	ErrChangedSinceRead = errors.New("the resource changed at the provider since it was read")
	// ErrThrottled means the provider throttled us: back off.
	ErrThrottled = errors.New("provider throttled the request")
	// ErrCredentials means the credentials were refused.
	ErrCredentials = errors.New("credentials refused by the provider")
)

// FieldError is bad input: a stable reason and a message naming the field. Nothing is sent to
// the provider while it stands.
type FieldError struct {
	Field   string // e.g. eksConfig.kubernetesVersion
	Reason  string // e.g. VersionDowngrade
	Message string // what is wrong and what to do
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// ProviderError is a failure reported by the provider with its code.
type ProviderError struct {
	Op   string
	Code string
	// Message is the provider's own message, without the SDK's wrapping or request IDs: it
	// goes into conditions, which must not change when a retry fails the same way.
	Message string
	Err     error
}

func (e *ProviderError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Op, e.Code, e.Err) }
func (e *ProviderError) Unwrap() error { return e.Err }
