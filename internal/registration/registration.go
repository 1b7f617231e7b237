// Package registration wires the management side of cluster registration: tokens, Clusters,
// registrations, manager-initiated import and the local cluster.
package registration

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/registration/access"
	"github.com/droverhq/drover/internal/registration/cluster"
	"github.com/droverhq/drover/internal/registration/clusterregistration"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/importer"
	"github.com/droverhq/drover/internal/registration/internal/kube"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/registration/token"
)

// Options configure the registration controllers.
type Options struct {
	// Config names the ConfigMap with apiServerURL/apiServerCA (default drover-system/drover-registration).
	Config config.Ref
	// AllowTokensWithoutTTL accepts ClusterRegistrationTokens without spec.ttl.
	AllowTokensWithoutTTL bool
	// RequestTokenTTL is the lifetime of request tokens (default 24h; agents renew them).
	RequestTokenTTL time.Duration
	// RenewalTokenTTL is the lifetime of the agents' renewal identity tokens (register-only;
	// default 30 days, agents renew them): how long an agent may be offline and still come back
	// without a new bootstrap.
	RenewalTokenTTL time.Duration
	// LocalConfig, when set, registers the management cluster itself as "local".
	LocalConfig *rest.Config
	// RegistrationWorkers is the number of concurrent grants (default 128).
	RegistrationWorkers int
	// AnswerTTL and ReaderWindow: see clusterregistration.Reconciler (defaults 30m and 10m).
	AnswerTTL, ReaderWindow time.Duration
	// AgentDisconnectAfter is how long an agent may miss its heartbeats before its Cluster is
	// Ready=False, reason AgentDisconnected (default cluster.DefaultAgentDisconnectAfter).
	AgentDisconnectAfter time.Duration
	// AgentImage is the image of imported agents whose Cluster sets none (default
	// manifests.DefaultImage(), this server's version); bundle.Options.AgentImage must match.
	AgentImage string
}

// Setup creates drover's registration namespaces and adds the controllers to mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, c client.Client, opts Options) error {
	for _, ns := range []string{fleetv1alpha1.SystemRegistrationNamespace, fleetv1alpha1.DefaultWorkspaceNamespace} {
		if err := kube.EnsureNamespace(ctx, c, ns, nil); err != nil {
			return err
		}
	}
	mc, reader := mgr.GetClient(), mgr.GetAPIReader()
	if err := (&token.Reconciler{Client: mc, APIReader: reader, Config: opts.Config, AllowNoTTL: opts.AllowTokensWithoutTTL}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up token controller: %w", err)
	}
	recorder := mgr.GetEventRecorder("drover-registration")
	if err := (&cluster.Reconciler{Client: mc, APIReader: reader, RequestTokenTTL: opts.RequestTokenTTL, RenewalTokenTTL: opts.RenewalTokenTTL, Recorder: recorder,
		AgentDisconnectAfter: opts.AgentDisconnectAfter}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up cluster controller: %w", err)
	}
	if err := (&clusterregistration.Reconciler{Client: mc, APIReader: reader, RequestTokenTTL: opts.RequestTokenTTL, MaxConcurrentReconciles: opts.RegistrationWorkers,
		RenewalTokenTTL: opts.RenewalTokenTTL, Recorder: recorder,
		AnswerTTL: opts.AnswerTTL, ReaderWindow: opts.ReaderWindow}).SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("set up clusterregistration controller: %w", err)
	}
	if err := (&access.Reconciler{Client: mc}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up cluster access controller: %w", err)
	}
	if err := (&importer.Reconciler{Client: mc, APIReader: reader, Config: opts.Config, AgentImage: opts.AgentImage}).SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("set up import controller: %w", err)
	}
	if opts.LocalConfig != nil {
		if err := (&local.Reconciler{Client: mc, LocalConfig: opts.LocalConfig}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up local cluster controller: %w", err)
		}
	}
	return nil
}

// Controllers returns a function for server.Options.Controllers that sets up the registration
// controllers on the server's manager.
func Controllers(opts Options) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		// Setup only registers indexes and writes namespaces: it does not outlive the call.
		return Setup(context.Background(), mgr, mgr.GetClient(), opts)
	}
}
