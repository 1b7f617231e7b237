package deployer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/release"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/helmchart"
	"github.com/droverhq/drover/internal/text"
)

// helmTimeout bounds one Helm install or upgrade (its hooks included).
const helmTimeout = 5 * time.Minute

// helmMaxHistory is how many revisions of a release Helm keeps.
const helmMaxHistory = 10

// recordKeyHelm holds "<namespace>/<release>" in the record of a Helm BundleDeployment.
const recordKeyHelm = "helmRelease"

// ReleaseDeploymentLabel is the Helm release label (on the release's storage Secret, as
// `helm install --labels` sets) that records which deployment ID a revision deployed: a hash
// of it, since deployment IDs need not be valid label values. The agent upgrades a release only
// when its deployed revision carries another one, so a BundleDeployment status read from a
// stale cache (the revision's deployment ID not recorded as applied yet) cannot cause an
// extra upgrade.
const ReleaseDeploymentLabel = fleetv1alpha1.LabelPrefix + "deployment-id-hash"

// deploymentLabel is the value of ReleaseDeploymentLabel for a deployment ID.
func deploymentLabel(deploymentID string) string { return hash(deploymentID) }

// helmRelease is where a Helm BundleDeployment's release lives.
type helmRelease struct {
	namespace, name string
	values          map[string]any
	// fromSecrets are the values read from downstream Secrets (valuesFrom): every one of them
	// is redacted from messages, whatever its key's name.
	fromSecrets []map[string]any
}

// valuesKey is a valuesFrom reference's default key, Fleet's.
const valuesKey = "values.yaml"

// withValuesFrom merges over rel's values what the ConfigMap and Secret keys of from hold on
// the downstream cluster, in order (an entry's ConfigMap, then its Secret), as Fleet does.
// Errors name the object and key, never a value.
func (r *Reconciler) withValuesFrom(ctx context.Context, rel *helmRelease, from []fleetv1alpha1.HelmValuesFrom) error {
	read := func(kind string, ref *fleetv1alpha1.ValuesKeyRef) (map[string]any, error) {
		ns, key := ref.Namespace, ref.Key
		if ns == "" {
			ns = rel.namespace
		}
		if key == "" {
			key = valuesKey
		}
		where := fmt.Sprintf("valuesFrom: %s %s/%s key %q", kind, ns, ref.Name, key)
		var data []byte
		var found bool
		if kind == "ConfigMap" {
			cm := &corev1.ConfigMap{}
			if err := r.Downstream.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, cm); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			var s string
			s, found = cm.Data[key]
			data = []byte(s)
		} else {
			sec := &corev1.Secret{}
			if err := r.Downstream.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, sec); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			data, found = sec.Data[key]
		}
		if !found {
			return nil, fmt.Errorf("%s: no such key", where)
		}
		var values map[string]any
		if err := yaml.Unmarshal(data, &values); err != nil {
			// The parser's message can quote the text; say where only.
			return nil, fmt.Errorf("%s: not a YAML map of values", where)
		}
		return values, nil
	}
	for _, f := range from {
		for _, ref := range []struct {
			kind string
			ref  *fleetv1alpha1.ValuesKeyRef
		}{{"ConfigMap", f.ConfigMapKeyRef}, {"Secret", f.SecretKeyRef}} {
			if ref.ref == nil {
				continue
			}
			values, err := read(ref.kind, ref.ref)
			if err != nil {
				return err
			}
			if ref.kind == "Secret" {
				rel.fromSecrets = append(rel.fromSecrets, values)
			}
			if rel.values == nil {
				rel.values = map[string]any{}
			}
			rel.values = helmchart.MergeValues(rel.values, values)
		}
	}
	return nil
}

func (h helmRelease) String() string { return h.namespace + "/" + h.name }

func releaseOf(bd *fleetv1alpha1.BundleDeployment, h *fleetv1alpha1.BundleHelm) (helmRelease, error) {
	rel := helmRelease{namespace: bd.Spec.Options.DefaultNamespace, name: h.ReleaseName}
	if rel.namespace == "" {
		rel.namespace = "default"
	}
	if rel.name == "" {
		rel.name = helmchart.ReleaseName(bd.Name)
	}
	values := h.Values
	if v := bd.Spec.Options.HelmValues; v != nil {
		values = v // rendered for this cluster from the Bundle's template
	}
	if values != nil && len(values.Raw) > 0 {
		if err := json.Unmarshal(values.Raw, &rel.values); err != nil {
			return rel, fmt.Errorf("helm values are not a JSON object: %w", err)
		}
	}
	return rel, nil
}

// restGetter gives Helm the downstream cluster of a rest.Config (the agent has no kubeconfig).
type restGetter struct {
	cfg       *rest.Config
	namespace string
}

var _ genericclioptions.RESTClientGetter = &restGetter{}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return nil, fmt.Errorf("downstream discovery: %w", err)
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	m := restmapper.NewDeferredDiscoveryRESTMapper(dc)
	return restmapper.NewShortcutExpander(m, dc, nil), nil
}

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

// helmConfig is Helm's action configuration for namespace on the downstream cluster, storing
// releases in Secrets (Helm's default, so the helm CLI sees them). Helm's own log is discarded:
// it may show rendered manifests.
func (r *Reconciler) helmConfig(namespace string) (*action.Configuration, error) {
	if r.DownstreamConfig == nil {
		return nil, errors.New("this agent cannot install Helm releases: no downstream REST config")
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(&restGetter{cfg: r.DownstreamConfig, namespace: namespace}, namespace, "secret"); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return cfg, nil
}

// reconcileHelm installs or upgrades the Helm release of a BundleDeployment whose content is a
// chart, or checks the release's resources when its deployment ID is applied already.
func (r *Reconciler) reconcileHelm(ctx context.Context, bd, before *fleetv1alpha1.BundleDeployment, h *fleetv1alpha1.BundleHelm) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("deploymentID", bd.Spec.DeploymentID)
	rel, err := releaseOf(bd, h)
	fail := func(err error) (ctrl.Result, error) {
		// Helm's errors may quote values (a template's fail message): hide the sensitive ones.
		msg := helmchart.Redact(err.Error(), rel.values, Sensitive)
		for _, v := range rel.fromSecrets {
			msg = helmchart.Redact(msg, v, func(string) bool { return true })
		}
		msg = text.Clip(msg, 1024)
		bd.Status.Ready = false
		setCond(bd, fleetv1alpha1.ConditionApplied, false, fleetv1alpha1.ReasonApplyFailed, "Helm release "+rel.String()+": "+msg)
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, "Helm release "+rel.String()+" not deployed")
		if perr := r.patchStatus(ctx, bd, before); perr != nil {
			return ctrl.Result{}, perr
		}
		log.Info("Helm release not deployed", "release", rel.String(), "error", msg)
		return ctrl.Result{RequeueAfter: failedRetry}, nil
	}
	if err != nil {
		return fail(err)
	}
	if bd.Status.AppliedDeploymentID == bd.Spec.DeploymentID && meta.IsStatusConditionTrue(bd.Status.Conditions, fleetv1alpha1.ConditionApplied) {
		return r.checkHelm(ctx, bd, before, rel, h)
	}
	if err := r.withValuesFrom(ctx, &rel, h.ValuesFrom); err != nil {
		return fail(err)
	}
	log.Info("Installing or upgrading Helm release", "release", rel.String())
	deployed, err := r.helmDeploy(ctx, bd, rel, h.Chart)
	if err != nil {
		return fail(err)
	}
	objs, err := r.releaseObjects(bd, deployed.Manifest())
	if err != nil {
		return fail(err)
	}
	states := make([]fleetv1alpha1.ResourceState, 0, len(objs))
	want := map[key]bool{}
	for _, u := range objs {
		st := stateOf(u)
		states = append(states, st)
		want[keyOf(st)] = true
	}
	// What this BundleDeployment deployed before and does not now: plain resources it applied
	// (it was not a chart before), or another release (renamed or moved).
	old, oldRecord, err := r.readRecord(ctx, client.ObjectKeyFromObject(bd))
	if err != nil {
		return fail(err)
	}
	if oldRecord != nil {
		if prev := oldRecord.Data[recordKeyHelm]; prev != "" && prev != rel.String() {
			if err := r.helmUninstall(ctx, prev); err != nil {
				return fail(err)
			}
		} else if prev == "" {
			for _, o := range old {
				if want[keyOf(o)] {
					continue
				}
				if own, err := r.agentInstallation(ctx, o); err != nil || own {
					if err != nil {
						return fail(err)
					}
					continue
				}
				if err := r.deleteResource(ctx, o, ownerOf(bd)); err != nil {
					return fail(err)
				}
			}
		}
	}
	if err := r.writeRecord(ctx, bd, states, rel.String()); err != nil {
		return fail(err)
	}
	bd.Status.Resources = states
	bd.Status.AppliedDeploymentID, bd.Status.Ready, bd.Status.NonModified = bd.Spec.DeploymentID, true, true
	bd.Status.AppliedSyncGeneration = bd.Spec.Options.ForceSyncGeneration
	setCond(bd, fleetv1alpha1.ConditionApplied, true, fleetv1alpha1.ReasonSucceeded,
		fmt.Sprintf("Helm release %s revision %d deployed (%d resources)", rel, deployed.Version(), len(states)))
	setCond(bd, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "All resources exist")
	next := r.DriftInterval
	if waiting := workloads(objs); len(waiting) > 0 {
		bd.Status.Ready = false
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonResourcesNotReady, "Waiting for "+summarize(waiting))
		next = min(next, notReadyRecheck)
	}
	if err := r.patchStatus(ctx, bd, before); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// helmDeploy upgrades the release when it has a deployed revision, and installs it otherwise
// (replacing a failed or uninstalled one of the same name).
func (r *Reconciler) helmDeploy(ctx context.Context, bd *fleetv1alpha1.BundleDeployment, rel helmRelease, archive []byte) (release.Accessor, error) {
	ch, err := helmchart.Load(archive)
	if err != nil {
		return nil, err
	}
	cfg, err := r.helmConfig(rel.namespace)
	if err != nil {
		return nil, err
	}
	history, err := action.NewHistory(cfg).Run(rel.name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("read the release's history: %w", err)
	}
	var deployed release.Accessor
	for _, h := range history {
		if a, err := release.NewAccessor(h); err == nil && a.Status() == "deployed" {
			deployed = a
		}
	}
	label := map[string]string{ReleaseDeploymentLabel: deploymentLabel(bd.Spec.DeploymentID)}
	if deployed != nil && deployed.Labels()[ReleaseDeploymentLabel] == label[ReleaseDeploymentLabel] {
		// This deployment ID is deployed already (the status saying otherwise is stale).
		ctrl.LoggerFrom(ctx).V(1).Info("Helm release already at this deployment ID", "release", rel.String(), "revision", deployed.Version())
		return deployed, nil
	}
	values := rel.values
	if values == nil {
		values = map[string]any{}
	}
	var out release.Releaser
	if deployed != nil {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.WaitStrategy, up.Timeout, up.MaxHistory = rel.namespace, kube.HookOnlyStrategy, helmTimeout, helmMaxHistory
		up.Labels = label
		up.ForceConflicts = bd.Spec.Options.ForceConflicts || bd.Spec.Options.CorrectDrift || forcedSync(bd)
		out, err = up.RunWithContext(ctx, rel.name, ch, values)
	} else {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = rel.name, rel.namespace, true
		in.Replace = len(history) > 0
		in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, helmTimeout
		in.Labels = label
		in.ForceConflicts = bd.Spec.Options.ForceConflicts || bd.Spec.Options.CorrectDrift || forcedSync(bd)
		out, err = in.RunWithContext(ctx, ch, values)
	}
	if err != nil {
		return nil, err
	}
	return release.NewAccessor(out)
}

// helmUninstall removes release "<namespace>/<name>" (gone already: nothing to do).
func (r *Reconciler) helmUninstall(ctx context.Context, nsName string) error {
	ns, name, _ := strings.Cut(nsName, "/")
	cfg, err := r.helmConfig(ns)
	if err != nil {
		return err
	}
	u := action.NewUninstall(cfg)
	u.WaitStrategy, u.Timeout, u.IgnoreNotFound = kube.HookOnlyStrategy, helmTimeout, true
	if _, err := u.Run(name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("uninstall Helm release %s: %w", nsName, err)
	}
	ctrl.LoggerFrom(ctx).Info("Uninstalled Helm release", "release", nsName)
	return nil
}

// releaseObjects decodes a release manifest into objects, namespaced ones defaulting to the
// release's namespace (as Helm applies them).
func (r *Reconciler) releaseObjects(bd *fleetv1alpha1.BundleDeployment, manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifest)), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode the release manifest: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := r.resolve(bd, u); err != nil && !meta.IsNoMatchError(err) {
			return nil, err
		}
		out = append(out, u)
	}
}

// checkHelm checks a deployed release: its resources exist and its workloads are ready. A
// release deleted downstream (helm uninstall) is installed again with correctDrift, else
// reported.
func (r *Reconciler) checkHelm(ctx context.Context, bd, before *fleetv1alpha1.BundleDeployment, rel helmRelease, h *fleetv1alpha1.BundleHelm) (ctrl.Result, error) {
	cfg, err := r.helmConfig(rel.namespace)
	var cur release.Accessor
	if err == nil {
		var got release.Releaser
		if got, err = action.NewGet(cfg).Run(rel.name); err == nil {
			cur, err = release.NewAccessor(got)
		}
	}
	missing := errors.Is(err, driver.ErrReleaseNotFound) || (cur != nil && cur.Status() != "deployed")
	if err != nil && !missing {
		return ctrl.Result{}, fmt.Errorf("read Helm release %s: %w", rel, err)
	}
	if missing && bd.Spec.Options.CorrectDrift {
		ctrl.LoggerFrom(ctx).Info("Helm release gone or not deployed downstream: installing it again", "release", rel.String())
		bd.Status.AppliedDeploymentID = ""
		return r.reconcileHelm(ctx, bd, before, h)
	}
	var states []fleetv1alpha1.ResourceState
	var notReady []string
	nMissing := 0
	if cur != nil && !missing {
		objs, err := r.releaseObjects(bd, cur.Manifest())
		if err != nil {
			return ctrl.Result{}, err
		}
		for _, u := range objs {
			st := stateOf(u)
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(u.GroupVersionKind())
			err := r.Downstream.Get(ctx, client.ObjectKeyFromObject(u), live)
			switch {
			case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
				st.State, st.Message = StateMissing, "deleted downstream"
				nMissing++
			case err != nil:
				return ctrl.Result{}, fmt.Errorf("read %s: %w", describe(u), err)
			default:
				if ok, why := health(live); !ok {
					notReady = append(notReady, describe(live)+": "+why)
					st.State, st.Message = StateNotReady, why
				}
			}
			states = append(states, st)
		}
		bd.Status.Resources = states
	}
	bd.Status.NonModified = !missing && nMissing == 0
	bd.Status.Ready = bd.Status.NonModified && len(notReady) == 0
	switch {
	case missing:
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, "Helm release "+rel.String()+" is gone or not deployed downstream")
	case nMissing > 0:
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonApplyFailed, fmt.Sprintf("%d resources of Helm release %s deleted downstream", nMissing, rel))
	case len(notReady) > 0:
		setCond(bd, fleetv1alpha1.ConditionReady, false, fleetv1alpha1.ReasonResourcesNotReady, summarize(notReady))
	default:
		setCond(bd, fleetv1alpha1.ConditionReady, true, fleetv1alpha1.ReasonSucceeded, "All resources exist and are ready")
	}
	bd.Status.Display = bundle.Display(bd) // a status an older agent wrote has none
	if !equalStatus(before, bd) {
		if err := r.patchStatus(ctx, bd, before); err != nil {
			return ctrl.Result{}, err
		}
	}
	next := r.DriftInterval
	if len(notReady) > 0 {
		next = min(next, notReadyRecheck)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}
