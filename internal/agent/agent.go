// Package agent is drover's downstream agent: it registers (package register), then applies the
// cluster's BundleDeployments (package deployer) and checks in (package heartbeat). Only the
// leader of the agent's replicas registers and works, so replicas never race to register.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
	"github.com/droverhq/drover/internal/agent/heartbeat"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/agent/register"
	"github.com/droverhq/drover/internal/registration/names"
)

// StatusConfigMap is where the agent reports its own condition downstream, readable with
// kubectl even when the management cluster no longer accepts it.
const StatusConfigMap = "drover-agent-status"

// Options configure the agent.
type Options struct {
	// Config is the downstream cluster (in-cluster config in a pod).
	Config *rest.Config
	// Namespace is the agent namespace (default drover-agent).
	Namespace string
	// ClientID and Labels override the agent ConfigMap's.
	ClientID string
	Labels   map[string]string
	// LeaderElection elects one active replica with a Lease in Namespace.
	LeaderElection bool
	// Identity of this replica for leader election (default hostname).
	Identity string
	// HeartbeatInterval defaults to 1m.
	HeartbeatInterval time.Duration
	// RetryMin and RetryMax bound the backoff between failed registrations (default 5s..5m).
	RetryMin, RetryMax time.Duration
	// RequestTokenTTL is the lifetime asked for when renewing the request token (default 24h).
	RequestTokenTTL time.Duration
	// RenewalTokenTTL is the lifetime asked for when refreshing the renewal identity's token
	// (default 30 days): an agent offline for longer needs a new bootstrap.
	RenewalTokenTTL time.Duration
	// DriftInterval is how often applied resources are checked for drift (default 30s).
	DriftInterval time.Duration
	// MetricsAddr serves /metrics, HealthAddr /healthz and /readyz, for as long as the agent
	// runs ("" or "0": not served; drover agent listens on :8080 and :8081).
	MetricsAddr, HealthAddr string
}

// Run runs the agent until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Namespace == "" {
		o.Namespace = manifests.DefaultNamespace
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = time.Minute
	}
	if o.RetryMin == 0 {
		o.RetryMin = 5 * time.Second
	}
	if o.RetryMax == 0 {
		o.RetryMax = 5 * time.Minute
	}
	if o.RequestTokenTTL == 0 {
		o.RequestTokenTTL = 24 * time.Hour
	}
	if o.Identity == "" {
		o.Identity, _ = os.Hostname()
	}
	down, err := client.New(o.Config, client.Options{Scheme: register.Scheme})
	if err != nil {
		return fmt.Errorf("downstream client: %w", err)
	}
	if err := serve(ctx, o); err != nil {
		return err
	}
	a := &agent{o: o, down: down}
	if !o.LeaderElection {
		return a.loop(ctx)
	}
	cs, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return fmt.Errorf("downstream clientset: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: "drover-agent"},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	// RunOrDie does not wait for OnStartedLeading to return (it may even start it after
	// returning): Run waits for a loop that started, and a late callback does not start one.
	var mu sync.Mutex
	running, stopped := false, false
	result := make(chan error, 1)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				running = true
				mu.Unlock()
				result <- a.loop(ctx)
			},
			OnStoppedLeading: func() {},
		},
	})
	mu.Lock()
	stopped = true
	wait := running
	mu.Unlock()
	if wait {
		return <-result
	}
	return nil
}

type agent struct {
	o    Options
	down client.Client
}

func (a *agent) registerOptions() register.Options {
	return register.Options{Downstream: a.down, Namespace: a.o.Namespace, ClientID: a.o.ClientID, Labels: a.o.Labels, RenewalTokenTTL: a.o.RenewalTokenTTL}
}

// loop registers and works; after a failure it backs off exponentially, so an agent that cannot
// register (revoked credential, no bootstrap secret) waits instead of hammering anything.
func (a *agent) loop(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx)
	delay, attempts := a.o.RetryMin, 0
	for ctx.Err() == nil {
		attempts++
		ro := a.registerOptions()
		// What the registration waits for (the management cluster's answer, a refusal) shows
		// downstream at once, not only when it ends.
		ro.Report = func(ctx context.Context, reason, msg string) { a.report(ctx, reason, msg, attempts) }
		cred, err := register.Ensure(ctx, ro)
		if err == nil {
			a.report(ctx, fleetv1alpha1.ReasonRegistered, "Registered as cluster "+cred.ClusterNamespace+"/"+cred.ClusterName, attempts)
			delay, attempts = a.o.RetryMin, 0
			err = a.work(ctx, cred)
			if ctx.Err() != nil {
				return nil
			}
		}
		reason := fleetv1alpha1.ReasonRegistrationFailed
		var f *register.Failure
		if errors.As(err, &f) {
			reason = f.Reason
		}
		if ctx.Err() != nil {
			return nil // stopped while registering: not a failure to report
		}
		// Expected failures (a rejected or expired token, a refusal, an unreachable management
		// cluster) are retried for as long as the agent runs: one line per attempt with the
		// reason and what to do, at Info, since the production logger adds a stack trace to
		// every Error, which says nothing about them.
		log.Info("Agent not working, retrying later", "attempt", attempts, "reason", reason, "error", err.Error(), "retryIn", delay)
		a.report(ctx, reason, err.Error(), attempts)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		delay = min(delay*2, a.o.RetryMax)
	}
	return nil
}

// work runs the deployer, the heartbeat and token renewal until one fails or ctx ends.
func (a *agent) work(ctx context.Context, cred *register.Credential) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgr, err := ctrl.NewManager(cred.Config(), ctrl.Options{
		Scheme: register.Scheme,
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			return register.RESTMapper, nil
		},
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{cred.DeploymentNamespace: {}}},
		// Several agents may share one process in tests.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("agent manager: %w", err)
	}
	if err := (&deployer.Reconciler{Upstream: mgr.GetClient(), ContentReader: mgr.GetAPIReader(), Downstream: a.down,
		RecordNamespace: a.o.Namespace, DeploymentNamespace: cred.DeploymentNamespace, DriftInterval: a.o.DriftInterval,
		DownstreamConfig: a.o.Config, AccessRole: cred.ClusterNamespace + "/" + names.ClusterAccessRole(cred.ClusterName)}).SetupWithManager(mgr); err != nil {
		return err
	}
	errs := make(chan error, 4)
	go func() { errs <- mgr.Start(ctx) }()
	go func() { errs <- a.watchBootstrap(ctx, cred) }()
	go func() {
		errs <- heartbeat.Run(ctx, mgr.GetClient(), mgr.GetAPIReader(), cred.ClusterNamespace, cred.ClusterName, a.o.Namespace, cred.DeploymentNamespace, a.o.HeartbeatInterval, downstreamProbe(a.o))
	}()
	go func() { errs <- a.renew(ctx, cred) }()
	err = <-errs
	if err == nil && ctx.Err() == nil {
		err = errors.New("agent component stopped")
	}
	return err
}

// renew replaces the request token after half its lifetime (and, when due, the renewal
// identity's token). A rejected renewal ends the work: the loop then registers again with the
// renewal identity.
func (a *agent) renew(ctx context.Context, cred *register.Credential) error {
	for {
		wait := time.Hour
		if !cred.Expiry.IsZero() {
			wait = max(time.Until(cred.Expiry)/2, time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if err := cred.Renew(ctx, a.registerOptions(), a.o.RequestTokenTTL); err != nil {
			if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
				return err
			}
			ctrl.LoggerFrom(ctx).Info("Renewing request token failed, retrying in a minute", "error", err.Error())
			cred.Expiry = time.Now().Add(2 * time.Minute) // retry in a minute
		}
	}
}

// watchBootstrap ends the work when a bootstrap secret appears that points to another API server
// URL or CA than the credential (a Helm upgrade after the management endpoint moved): the loop
// then moves there (register.Ensure), even if the old endpoint no longer answers. A bootstrap
// secret for the same endpoint is deleted: the agent is registered already.
func (a *agent) watchBootstrap(ctx context.Context, cred *register.Credential) error {
	t := time.NewTicker(a.o.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		boot := &corev1.Secret{}
		err := a.down.Get(ctx, client.ObjectKey{Namespace: a.o.Namespace, Name: manifests.BootstrapSecret}, boot)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			ctrl.LoggerFrom(ctx).Info("Cannot read the bootstrap secret, retrying", "error", err.Error())
			continue
		}
		if cred.Moved(boot.Data) {
			return errors.New("the bootstrap secret points to another management API server URL or CA: moving there")
		}
		// Same endpoint, and this agent is registered: the secret is left over (drover pushed
		// a fresh one while the agent was already registering with the last). Its import token
		// must not linger downstream; the renewal identity does its job.
		if err := a.down.Delete(ctx, boot, client.Preconditions{UID: &boot.UID}); client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Info("Cannot delete a bootstrap secret left after registering, retrying", "error", err.Error())
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleted a bootstrap secret left after registering")
	}
}

// report writes the agent's condition to its status ConfigMap downstream.
func (a *agent) report(ctx context.Context, reason, msg string, attempts int) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.o.Namespace, Name: StatusConfigMap}}
	data := map[string]string{"reason": reason, "message": msg, "attempts": strconv.Itoa(attempts), "time": time.Now().UTC().Format(time.RFC3339)}
	err := a.down.Create(ctx, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta, Data: data})
	if apierrors.IsAlreadyExists(err) {
		if err = a.down.Get(ctx, client.ObjectKeyFromObject(cm), cm); err == nil {
			cm.Data = data
			err = a.down.Update(ctx, cm)
		}
	}
	if err != nil && ctx.Err() == nil {
		ctrl.LoggerFrom(ctx).Info("Cannot report the agent's status downstream", "error", err.Error())
	}
}
