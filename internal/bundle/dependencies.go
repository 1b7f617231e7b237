package bundle

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/text"
)

// dependsOnIndex indexes Bundles by their dependencies: "name:<bundle>" for each dependency by
// name, "selector" when one selects by label.
const dependsOnIndex = "dependsOn"

// stateDependencyNotReady is the summary state of a cluster held by a dependency.
const stateDependencyNotReady = "DependencyNotReady"

func indexDependencies(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.Bundle{}, dependsOnIndex, func(o client.Object) []string {
		var keys []string
		for _, d := range o.(*fleetv1alpha1.Bundle).Spec.DependsOn {
			switch {
			case d.Name != "":
				keys = append(keys, "name:"+d.Name)
			case d.Selector != nil:
				keys = append(keys, "selector")
			}
		}
		return keys
	}); err != nil {
		return fmt.Errorf("index Bundles by dependency: %w", err)
	}
	return nil
}

// dependents returns the Bundles of namespace ns that depend on the Bundle name (whose labels
// are lbls, nil if unknown): by name, or by a selector matching lbls.
func (r *Reconciler) dependents(ctx context.Context, ns, name string, lbls map[string]string) []reconcile.Request {
	var out []reconcile.Request
	var byName fleetv1alpha1.BundleList
	if err := r.Client.List(ctx, &byName, client.InNamespace(ns), client.MatchingFields{dependsOnIndex: "name:" + name}); err == nil {
		for _, b := range byName.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	var bySelector fleetv1alpha1.BundleList
	if err := r.Client.List(ctx, &bySelector, client.InNamespace(ns), client.MatchingFields{dependsOnIndex: "selector"}); err == nil {
		for _, b := range bySelector.Items {
			if b.Name == name {
				continue
			}
			for _, d := range b.Spec.DependsOn {
				if sel, err := metav1.LabelSelectorAsSelector(d.Selector); d.Selector != nil && err == nil && sel.Matches(labels.Set(lbls)) {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
					break
				}
			}
		}
	}
	return out
}

// dependentsOfBundle maps a Bundle event to the Bundles depending on it.
func (r *Reconciler) dependentsOfBundle(ctx context.Context, o client.Object) []reconcile.Request {
	return r.dependents(ctx, o.GetNamespace(), o.GetName(), o.GetLabels())
}

// dependentsOfDeployment maps a BundleDeployment event to the Bundles depending on its Bundle.
func (r *Reconciler) dependentsOfDeployment(ctx context.Context, o client.Object) []reconcile.Request {
	ns, name := o.GetLabels()[BundleNamespaceLabel], o.GetLabels()[BundleNameLabel]
	if name == "" {
		return nil
	}
	var lbls map[string]string
	b := &metav1.PartialObjectMetadata{}
	b.SetGroupVersionKind(fleetv1alpha1.GroupVersion.WithKind("Bundle"))
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err == nil {
		lbls = b.Labels
	}
	return r.dependents(ctx, ns, name, lbls)
}

// dependency is one Bundle b waits for, or a name that does not exist.
type dependency struct {
	name   string
	bundle *fleetv1alpha1.Bundle // nil: not found
}

// dependencies resolves b's spec.dependsOn, sorted by name.
func (r *Reconciler) dependencies(ctx context.Context, b *fleetv1alpha1.Bundle) ([]dependency, error) {
	seen := map[string]bool{}
	var out []dependency
	var all *fleetv1alpha1.BundleList
	for _, d := range b.Spec.DependsOn {
		switch {
		case d.Name != "":
			if seen[d.Name] {
				continue
			}
			seen[d.Name] = true
			dep := &fleetv1alpha1.Bundle{}
			err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: d.Name}, dep)
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("read dependency Bundle %s: %w", d.Name, err)
			}
			if err != nil {
				dep = nil
			}
			out = append(out, dependency{name: d.Name, bundle: dep})
		case d.Selector != nil:
			sel, err := metav1.LabelSelectorAsSelector(d.Selector)
			if err != nil {
				return nil, reconcile.TerminalError(fmt.Errorf("dependsOn selector: %w", err))
			}
			if all == nil {
				all = &fleetv1alpha1.BundleList{}
				if err := r.Client.List(ctx, all, client.InNamespace(b.Namespace)); err != nil {
					return nil, fmt.Errorf("list Bundles for dependsOn: %w", err)
				}
			}
			for i := range all.Items {
				o := &all.Items[i]
				if o.Name != b.Name && !seen[o.Name] && sel.Matches(labels.Set(o.Labels)) {
					seen[o.Name] = true
					out = append(out, dependency{name: o.Name, bundle: o})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// heldByDependencies returns, for each targeted cluster (by namespace) on which a dependency of
// b is not ready, why: the first such dependency.
func (r *Reconciler) heldByDependencies(ctx context.Context, b *fleetv1alpha1.Bundle, targeted map[string]*fleetv1alpha1.Cluster) (map[string]string, error) {
	if len(b.Spec.DependsOn) == 0 {
		return nil, nil
	}
	deps, err := r.dependencies(ctx, b)
	if err != nil {
		return nil, err
	}
	held := map[string]string{}
	for ns := range targeted {
		for _, d := range deps {
			why, err := r.notReadyOn(ctx, d, ns)
			if err != nil {
				return nil, err
			}
			if why != "" {
				held[ns] = why
				break
			}
		}
	}
	return held, nil
}

// notReadyOn says why dependency d is not ready on the cluster of namespace ns ("" if it is):
// its BundleDeployment there must exist, be at d's current version and be ready.
func (r *Reconciler) notReadyOn(ctx context.Context, d dependency, ns string) (string, error) {
	if d.bundle == nil {
		return "Bundle " + d.name + " does not exist", nil
	}
	bd := &fleetv1alpha1.BundleDeployment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: d.name}, bd)
	if client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("read BundleDeployment %s/%s of dependency: %w", ns, d.name, err)
	}
	current := d.bundle.Status.ObservedGeneration == d.bundle.Generation && d.bundle.Status.DeploymentID != ""
	switch {
	case err != nil || bd.Labels[BundleNamespaceLabel] != d.bundle.Namespace:
		return "Bundle " + d.name + " is not deployed on this cluster", nil
	case !current || bd.Spec.DeploymentID != WantedDeploymentID(d.bundle, bd) || !readyAt(bd, bd.Spec.DeploymentID):
		return "Bundle " + d.name + " is not ready", nil
	}
	return "", nil
}

// holdStatus counts the clusters held by dependencies without a BundleDeployment as pending,
// lists them, and makes the Ready condition say what they wait for.
func holdStatus(b *fleetv1alpha1.Bundle, held map[string]string, targeted map[string]*fleetv1alpha1.Cluster, have map[string]bool) {
	reportHeld(b, held, targeted, have, stateDependencyNotReady, fleetv1alpha1.ReasonDependencyNotReady, "waiting: ", "%d clusters held by spec.dependsOn: %s")
}

// templateStatus reports the clusters whose Helm values template does not render (they keep
// what they run, a new one gets nothing) as TemplateFailed.
func templateStatus(b *fleetv1alpha1.Bundle, failed map[string]string, targeted map[string]*fleetv1alpha1.Cluster, have map[string]bool) {
	reportHeld(b, failed, targeted, have, fleetv1alpha1.ReasonTemplateFailed, fleetv1alpha1.ReasonTemplateFailed, "values template: ",
		"The Helm values template (spec.helm.templateValues) does not render for %d clusters, which keep what they run: %s")
}

// agentStatus reports the clusters held because their agent lacks a feature the Bundle needs.
func agentStatus(b *fleetv1alpha1.Bundle, old map[string]string, targeted map[string]*fleetv1alpha1.Cluster, have map[string]bool) {
	reportHeld(b, old, targeted, have, fleetv1alpha1.ReasonAgentUpgradeRequired, fleetv1alpha1.ReasonAgentUpgradeRequired, "",
		"%d clusters keep what they run until their agent is upgraded (drover's agent Bundle upgrades it unless the Cluster pins spec.agentImage): %s")
}

// reportHeld counts the held clusters without a BundleDeployment as pending (state, message
// prefix+why) and sets Ready=False with reason, the message format's count and its
// "why on clusters" list, unless a halted rollout is the news.
func reportHeld(b *fleetv1alpha1.Bundle, held map[string]string, targeted map[string]*fleetv1alpha1.Cluster, have map[string]bool, state, reason, prefix, format string) {
	if len(held) == 0 {
		return
	}
	byWhy := map[string][]string{}
	var nss []string
	for ns := range held {
		nss = append(nss, ns)
	}
	sort.Slice(nss, func(i, j int) bool { return targeted[nss[i]].Name < targeted[nss[j]].Name })
	s := &b.Status.Summary
	for _, ns := range nss {
		why, name := held[ns], targeted[ns].Name
		byWhy[why] = append(byWhy[why], name)
		if have[ns] {
			continue // its BundleDeployment is counted (held at its version: out of date)
		}
		s.Pending++
		if len(s.NonReadyClusters) < 20 {
			s.NonReadyClusters = append(s.NonReadyClusters, fleetv1alpha1.NonReadyCluster{Name: name, State: state, Message: text.Clip(prefix+why, 512)})
		}
	}
	whys := make([]string, 0, len(byWhy))
	for why := range byWhy {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	parts := make([]string, 0, len(whys))
	for _, why := range whys {
		parts = append(parts, fmt.Sprintf("%s on %s", why, clusterList(byWhy[why])))
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil && c.Reason == fleetv1alpha1.EventRolloutHalted {
		return // the halted rollout is the more pressing news
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: reason, ObservedGeneration: b.Generation,
		Message: text.Clip(fmt.Sprintf(format, len(held), strings.Join(parts, "; ")), 1024)})
}

func clusterList(names []string) string {
	const show = 5
	switch {
	case len(names) == 1:
		return "cluster " + names[0]
	case len(names) <= show:
		return "clusters " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("clusters %s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}
