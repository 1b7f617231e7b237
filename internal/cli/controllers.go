package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
	"github.com/droverhq/drover/internal/hosted/join"
	migrationcontroller "github.com/droverhq/drover/internal/migration/controller"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/cluster"
)

// hostedOptions are the hosted-cluster sync settings of `drover server`.
type hostedOptions struct {
	refresh       map[string]*time.Duration
	rates         map[string]*hosted.Rate
	jitter        float64
	pollInterval  time.Duration
	hostedWorkers int
	// registerLocal registers the management cluster itself as the fleet cluster "local".
	registerLocal bool
	// agentImage is the image of every agent drover deploys (imported, local, agent Bundles).
	agentImage string
	// agentDisconnectAfter: a fleet Cluster whose agent missed its heartbeats this long is
	// Ready=False, AgentDisconnected.
	agentDisconnectAfter time.Duration
	// join makes active hosted clusters join the fleet unless their spec.fleet.join says no.
	join bool
	// agentRollout is --agent-rollout-max-unavailable: a number, a percentage, or "" (no bound).
	agentRollout string
}

// agentRolloutBudget reads --agent-rollout-max-unavailable.
func (o *hostedOptions) agentRolloutBudget() (*intstr.IntOrString, error) {
	if o.agentRollout == "" {
		return nil, nil
	}
	v := intstr.Parse(o.agentRollout)
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, true)
	if err != nil || n <= 0 || v.Type == intstr.String && !strings.HasSuffix(v.StrVal, "%") {
		return nil, fmt.Errorf("--agent-rollout-max-unavailable %q: want a positive number of clusters or a percentage such as 10%%, or \"\" for no bound", o.agentRollout)
	}
	return &v, nil
}

// Provider defaults: refresh every 300 s like the incumbent; API budgets from the providers'
// published limits (ARM reads: bucket 250, 25/s; GKE: about 10/s per project; EKS publishes
// none, so a conservative 10/s per account and region).
var providerRates = []struct {
	name, what string
	rate       hosted.Rate
}{
	{"eks", "AWS account and region", hosted.Rate{QPS: 10, Burst: 50}},
	{"aks", "Azure subscription", hosted.Rate{QPS: 25, Burst: 250}},
	{"gke", "Google Cloud project", hosted.Rate{QPS: 10, Burst: 50}},
}

func (o *hostedOptions) addFlags(f *pflag.FlagSet) {
	o.refresh, o.rates = map[string]*time.Duration{}, map[string]*hosted.Rate{}
	for _, p := range providerRates {
		d, r := new(time.Duration), p.rate
		o.refresh[p.name], o.rates[p.name] = d, &r
		f.DurationVar(d, p.name+"-refresh-interval", 300*time.Second, "how often an idle "+strings.ToUpper(p.name)+" cluster is re-read from the provider")
		f.Float64Var(&r.QPS, p.name+"-api-qps", p.rate.QPS, strings.ToUpper(p.name)+" API requests per second per "+p.what+" (token bucket refill; 0: unlimited)")
		f.IntVar(&r.Burst, p.name+"-api-burst", p.rate.Burst, strings.ToUpper(p.name)+" API token bucket size per "+p.what)
	}
	f.StringVar(&o.agentImage, "agent-image", manifests.DefaultImage(), "image of the agents drover deploys to clusters that set no spec.agentImage (default: this server's version)")
	f.BoolVar(&o.registerLocal, "register-local", true, "register the cluster drover runs in as the fleet cluster \"local\" (default: on only in a pod, with in-cluster credentials)")
	f.Float64Var(&o.jitter, "refresh-jitter", 0.1, "fraction of the refresh interval added at random, so clusters do not refresh in the same second")
	f.DurationVar(&o.pollInterval, "hosted-poll-interval", 30*time.Second, "how often a hosted cluster with work in progress is re-read")
	f.IntVar(&o.hostedWorkers, "hosted-workers", 8, "hosted clusters synced at once (raise for thousands of clusters at high cloud latency)")
	f.DurationVar(&o.agentDisconnectAfter, "agent-disconnect-after", cluster.DefaultAgentDisconnectAfter, "a fleet cluster whose agent has missed its heartbeats this long becomes Ready=False, reason AgentDisconnected (default: 3 heartbeat intervals of the agents' default 1m); rollouts do not wait for it")
	f.StringVar(&o.agentRollout, "agent-rollout-max-unavailable", "10%", "at most this many fleet clusters' agents (a number, or a percentage of the connected clusters) are being upgraded and not ready at once: a new agent that does not come up stops there; \"\" upgrades every agent at once")
	f.BoolVar(&o.join, "hosted-join", true, "hosted clusters join the fleet once active (kubeconfig Secret, fleet Cluster, agent) unless their spec.fleet.join is false; false: only those with spec.fleet.join: true")
}

func (o *hostedOptions) controllers() []func(ctrl.Manager) error {
	return []func(ctrl.Manager) error{
		func(mgr ctrl.Manager) error {
			intervals, rates := map[string]time.Duration{}, map[string]hosted.Rate{}
			for name, d := range o.refresh {
				intervals[name], rates[name] = *d, *o.rates[name]
			}
			limits := &hosted.Limits{PerProvider: rates}
			providers := []hosted.Provider{eks.Provider{}, gke.Provider{}, aks.Provider{}}
			j := &join.Reconciler{
				Client: mgr.GetClient(), Providers: providers, Recorder: mgr.GetEventRecorder("drover-hosted-join"),
				Limits: limits, DefaultJoin: o.join, Workers: o.hostedWorkers,
			}
			if err := j.SetupWithManager(mgr); err != nil {
				return err
			}
			r := &hosted.Reconciler{
				Client:           mgr.GetClient(),
				Providers:        providers,
				Recorder:         mgr.GetEventRecorder("drover-hosted"),
				RefreshInterval:  300 * time.Second,
				RefreshIntervals: intervals,
				Jitter:           o.jitter,
				PollInterval:     o.pollInterval,
				Workers:          o.hostedWorkers,
				Limits:           limits,
			}
			return r.SetupWithManager(mgr)
		},
		func(mgr ctrl.Manager) error {
			return (&migrationcontroller.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		},
		func(mgr ctrl.Manager) error {
			opts := registration.Options{AgentImage: o.agentImage, AgentDisconnectAfter: o.agentDisconnectAfter}
			if o.registerLocal {
				opts.LocalConfig = mgr.GetConfig()
			}
			return registration.Controllers(opts)(mgr)
		},
		func(mgr ctrl.Manager) error {
			budget, err := o.agentRolloutBudget()
			if err != nil {
				return err
			}
			return bundle.Setup(mgr, bundle.Options{ManageAgents: true, AgentImage: o.agentImage, AgentRolloutMaxUnavailable: budget})
		},
		gitrepo.Controllers(),
	}
}
