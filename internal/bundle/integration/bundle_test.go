package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/deployer"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/bundle/agentmgmt"
	"github.com/droverhq/drover/test/envtest"
)

func downstreamOf(name string) *envtest.Cluster {
	if name == fullName {
		return full
	}
	return plain
}

// present reports whether the ConfigMap ns/name exists in each downstream cluster.
func present(t testing.TB, ns, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, c := range []string{fullName, plainName} {
		err := downstreamOf(c).Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		if err != nil && !isNotFound(err) {
			t.Fatal(err)
		}
		out[c] = err == nil
	}
	return out
}

func TestLabelTargetingAndRelabelling(t *testing.T) {
	ctx := t.Context()
	const label = "bundle-test/env"
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "by-label"},
		Spec: fleetv1alpha1.BundleSpec{
			DefaultNamespace: "default",
			Resources:        raw(t, configMap("", "by-label", map[string]string{"k": "v"})),
			Targets:          []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "prod"}}}},
			Exclude:          []fleetv1alpha1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label + "-excluded": "true"}}}},
		}}
	patchCluster(t, fullName, func(c *fleetv1alpha1.Cluster) { setLabel(c, label, "prod") })
	patchCluster(t, plainName, func(c *fleetv1alpha1.Cluster) { setLabel(c, label, "dev") })
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })

	steps := []struct {
		name   string
		labels map[string]map[string]string // cluster → labels to set ("" value: remove)
		want   map[string]bool
	}{
		{"only the matching cluster", nil, map[string]bool{fullName: true, plainName: false}},
		{"relabelling adds a cluster", map[string]map[string]string{plainName: {label: "prod"}}, map[string]bool{fullName: true, plainName: true}},
		{"relabelling removes a cluster", map[string]map[string]string{fullName: {label: "dev"}}, map[string]bool{fullName: false, plainName: true}},
		{"exclusion removes a matching cluster", map[string]map[string]string{plainName: {label + "-excluded": "true"}}, map[string]bool{fullName: false, plainName: false}},
		{"back again", map[string]map[string]string{fullName: {label: "prod"}, plainName: {label + "-excluded": ""}}, map[string]bool{fullName: true, plainName: true}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			for c, l := range s.labels {
				patchCluster(t, c, func(c *fleetv1alpha1.Cluster) {
					for k, v := range l {
						setLabel(c, k, v)
					}
				})
			}
			eventually(t, 30*time.Second, func() error {
				for c, want := range s.want {
					bd, err := bundleDeployment(t, c, b.Name)
					if err != nil && !isNotFound(err) {
						return err
					}
					if has := err == nil; has != want {
						return fmt.Errorf("cluster %s: BundleDeployment exists %v, want %v", c, has, want)
					}
					if want && (!bd.Status.Ready || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID) {
						return fmt.Errorf("cluster %s: BundleDeployment not applied: %+v", c, bd.Status)
					}
				}
				if got := present(t, "default", "by-label"); fmt.Sprint(got) != fmt.Sprint(s.want) {
					return fmt.Errorf("downstream ConfigMap present %v, want %v", got, s.want)
				}
				got := &fleetv1alpha1.Bundle{}
				if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
					return err
				}
				n := 0
				for _, w := range s.want {
					if w {
						n++
					}
				}
				if sum := got.Status.Summary; sum.DesiredReady != n || sum.Ready != n {
					return fmt.Errorf("bundle summary %+v, want %d desired and ready", sum, n)
				}
				return nil
			})
		})
	}

	t.Run("content is stored once and readable only where referenced", func(t *testing.T) {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{fullName, plainName} {
			bd, err := bundleDeployment(t, c, b.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(bd.Spec.Manifests) != 0 || bd.Spec.Content == nil || bd.Spec.Content.Name != got.Status.Content {
				t.Errorf("cluster %s: BundleDeployment does not just reference content %s: %+v", c, got.Status.Content, bd.Spec)
			}
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: got.Status.Content}, &fleetv1alpha1.BundleContent{}); err != nil {
			t.Errorf("content %s: %v", got.Status.Content, err)
		}
	})
}

func setLabel(c *fleetv1alpha1.Cluster, k, v string) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if v == "" {
		delete(c.Labels, k)
		return
	}
	c.Labels[k] = v
}

func TestDriftIsReportedAndCorrected(t *testing.T) {
	ctx := t.Context()
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "drift"},
		Spec: fleetv1alpha1.BundleSpec{
			DefaultNamespace: "default",
			Resources:        raw(t, configMap("", "drift", map[string]string{"color": "blue"})),
			Targets:          []fleetv1alpha1.BundleTarget{{ClusterName: plainName}},
		}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
	bdState := func(want func(*fleetv1alpha1.BundleDeployment) error) {
		t.Helper()
		waitBundleDeployment(t, plainName, b.Name, 30*time.Second, want)
	}
	bdState(func(bd *fleetv1alpha1.BundleDeployment) error {
		if !bd.Status.Ready || !bd.Status.NonModified || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
			return fmt.Errorf("not applied: %+v", bd.Status)
		}
		return nil
	})
	// Someone edits the applied ConfigMap downstream.
	cm := &corev1.ConfigMap{}
	if err := plain.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "drift"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["color"] = "red"
	if err := plain.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Run("reported with the field", func(t *testing.T) {
		bdState(func(bd *fleetv1alpha1.BundleDeployment) error {
			if bd.Status.NonModified || len(bd.Status.Resources) != 1 {
				return fmt.Errorf("drift not reported: %+v", bd.Status)
			}
			r := bd.Status.Resources[0]
			if r.State != deployer.StateModified || !strings.Contains(r.Message, `data.color: want "blue", have "red"`) {
				return fmt.Errorf("resource state %s %q", r.State, r.Message)
			}
			return nil
		})
		waitBundle(t, b, 10*time.Second, func(got *fleetv1alpha1.Bundle) error {
			if s := got.Status.Summary; s.Modified != 1 || len(s.NonReadyClusters) != 1 || s.NonReadyClusters[0].Name != plainName || !strings.Contains(s.NonReadyClusters[0].Message, "data.color") {
				return fmt.Errorf("bundle summary %+v", s)
			}
			// Drift is not a rollout on its way (Pending): drover check lists the Bundle.
			if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Reason != fleetv1alpha1.ReasonModified ||
				!strings.Contains(c.Message, "1 modified downstream") || !strings.Contains(c.Message, "correctDrift") {
				return fmt.Errorf("Ready condition %+v, want reason %s saying what to do", c, fleetv1alpha1.ReasonModified)
			}
			return nil
		})
		if err := plain.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || cm.Data["color"] != "red" {
			t.Fatalf("drift was corrected without correctDrift: %v %v", cm.Data, err)
		}
	})
	t.Run("corrected when asked", func(t *testing.T) {
		patchBundle(t, b, func(b *fleetv1alpha1.Bundle) { b.Spec.CorrectDrift = true })
		eventually(t, 30*time.Second, func() error {
			if err := plain.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			if cm.Data["color"] != "blue" {
				return fmt.Errorf("downstream color %q", cm.Data["color"])
			}
			return nil
		})
		bdState(func(bd *fleetv1alpha1.BundleDeployment) error {
			if !bd.Status.NonModified || !bd.Status.Ready {
				return fmt.Errorf("still modified: %+v", bd.Status)
			}
			return nil
		})
		// With correctDrift on, a change downstream is corrected by the agent's drift check, and an
		// Event names the cluster and the resource, not the values.
		eventually(t, 10*time.Second, func() error {
			if err := plain.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			cm.Data["color"] = "red"
			return plain.Client.Update(ctx, cm)
		})
		eventually(t, 30*time.Second, func() error {
			if err := plain.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
				return err
			}
			if cm.Data["color"] != "blue" {
				return fmt.Errorf("downstream color %q", cm.Data["color"])
			}
			return nil
		})
		ev := bundleEvent(t, b.Name, fleetv1alpha1.EventDriftCorrected)
		if !strings.Contains(ev.Note, plainName) || !strings.Contains(ev.Note, "ConfigMap default/drift") || strings.Contains(ev.Note, "red") {
			t.Errorf("DriftCorrected note %q", ev.Note)
		}
		if got := metric(t, "drover_bundle_events_total", map[string]string{"reason": fleetv1alpha1.EventDriftCorrected}); got < 1 {
			t.Errorf("drover_bundle_events_total{reason=DriftCorrected} = %v", got)
		}
	})
}

// agentPod returns the UID of the single running agent pod of the full cluster and its image.
func agentPod(t testing.TB) (uid, image string, err error) {
	t.Helper()
	var pods corev1.PodList
	if err := full.Client.List(t.Context(), &pods, client.InNamespace(agentNS), client.MatchingLabels{"app.kubernetes.io/name": "drover-agent"}); err != nil {
		return "", "", err
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	if len(live) != 1 || live[0].Status.Phase != corev1.PodRunning {
		return "", "", fmt.Errorf("want one running agent pod, have %d", len(live))
	}
	return string(live[0].UID), live[0].Spec.Containers[0].Image, nil
}

func TestAgentManagement(t *testing.T) {
	ctx := t.Context()
	before := importedAgentPodUID
	name := agentmgmt.BundleName(fullName)
	agentBD := func(want func(*fleetv1alpha1.BundleDeployment) error) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			bd, err := bundleDeployment(t, fullName, name)
			if err != nil {
				return err
			}
			return want(bd)
		})
	}
	t.Run("adopting an unchanged agent keeps its pod", func(t *testing.T) {
		agentBD(func(bd *fleetv1alpha1.BundleDeployment) error {
			if !bd.Status.Ready || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
				return fmt.Errorf("agent bundle not applied: %+v", bd.Status)
			}
			return nil
		})
		d := &appsv1.Deployment{}
		if err := full.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: "drover-agent"}, d); err != nil {
			t.Fatal(err)
		}
		if d.Annotations["fleet.drover.io/bundle-deployment"] == "" {
			t.Fatalf("agent Deployment was not applied by its bundle: %v", d.Annotations)
		}
		// An unchanged pod template keeps the one ReplicaSet (and so the pod).
		var rs appsv1.ReplicaSetList
		if err := full.Client.List(ctx, &rs, client.InNamespace(agentNS)); err != nil {
			t.Fatal(err)
		}
		if len(rs.Items) != 1 {
			t.Errorf("%d agent ReplicaSets after adoption, want 1", len(rs.Items))
		}
		uid, _, err := agentPod(t)
		if err != nil {
			t.Fatal(err)
		}
		if uid != before {
			t.Fatalf("agent pod replaced on adoption: %s → %s", before, uid)
		}
	})
	t.Run("changing an agent setting rolls out a new pod", func(t *testing.T) {
		const image = "ghcr.io/droverhq/drover:test-rollout"
		patchCluster(t, fullName, func(c *fleetv1alpha1.Cluster) {
			c.Spec.AgentImage = image
			c.Spec.AgentEnv = []corev1.EnvVar{{Name: "DROVER_TEST", Value: "1"}}
		})
		eventually(t, 90*time.Second, func() error {
			uid, img, err := agentPod(t)
			if err != nil {
				return err
			}
			if uid == before || img != image {
				return fmt.Errorf("agent pod %s image %s, want a new pod with %s", uid, img, image)
			}
			return nil
		})
		agentBD(func(bd *fleetv1alpha1.BundleDeployment) error {
			if !bd.Status.Ready || bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID {
				return fmt.Errorf("agent bundle not applied: %+v", bd.Status)
			}
			return nil
		})
	})
	// The brake for upgrading drover across a fleet: a paused agent Bundle keeps its cluster's
	// agent at its version while drover rewrites the Bundle for a new one (the rewrite once
	// silently unpaused it); resuming rolls the new version out.
	t.Run("a paused agent Bundle holds the agent's version", func(t *testing.T) {
		const image = "ghcr.io/droverhq/drover:test-held"
		_, held, err := agentPod(t)
		if err != nil {
			t.Fatal(err)
		}
		b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}
		patchBundle(t, b, func(b *fleetv1alpha1.Bundle) { b.Spec.Rollout.Paused = true })
		bd, err := bundleDeployment(t, fullName, name)
		if err != nil {
			t.Fatal(err)
		}
		heldID := bd.Spec.DeploymentID
		patchCluster(t, fullName, func(c *fleetv1alpha1.Cluster) { c.Spec.AgentImage = image })
		eventually(t, 30*time.Second, func() error {
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			if !bundleHas(b, image) {
				return errors.New("agent Bundle not rewritten for the new image yet")
			}
			if !b.Spec.Rollout.Paused {
				return errors.New("rewriting the agent Bundle unpaused it")
			}
			if b.Status.ObservedGeneration != b.Generation {
				return errors.New("Bundle not reconciled yet")
			}
			return nil
		})
		if bd, err := bundleDeployment(t, fullName, name); err != nil || bd.Spec.DeploymentID != heldID {
			t.Fatalf("paused agent Bundle: BundleDeployment %v, deploymentID %s → %s", err, heldID, bd.Spec.DeploymentID)
		}
		if _, img, err := agentPod(t); err != nil || img != held {
			t.Fatalf("paused agent Bundle: agent pod image %s (%v), want %s", img, err, held)
		}
		patchBundle(t, b, func(b *fleetv1alpha1.Bundle) { b.Spec.Rollout.Paused = false })
		eventually(t, 90*time.Second, func() error {
			if _, img, err := agentPod(t); err != nil || img != image {
				return fmt.Errorf("resumed: agent pod image %s (%w), want %s", img, err, image)
			}
			return nil
		})
	})
}

// bundleHas reports whether any of b's resources mentions s.
func bundleHas(b *fleetv1alpha1.Bundle, s string) bool {
	for _, r := range b.Spec.Resources {
		if strings.Contains(string(r.Raw), s) {
			return true
		}
	}
	return false
}

// TestDeletingABundle: its BundleDeployments go, the agent removes what they applied, and the
// content no Bundle lists any more is deleted.
func TestDeletingABundle(t *testing.T) {
	ctx := t.Context()
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "deleted"},
		Spec: fleetv1alpha1.BundleSpec{Resources: raw(t, configMap("default", "deleted", map[string]string{"unique": t.Name()})),
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	content := ""
	eventually(t, 30*time.Second, func() error {
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		if content = b.Status.Content; b.Status.Summary.Ready != 1 {
			return fmt.Errorf("not ready: %+v", b.Status.Summary)
		}
		return nil
	})
	if !present(t, "default", "deleted")[plainName] {
		t.Fatal("not applied downstream")
	}
	// The finalizer makes the cleanup below happen even if the Bundle is deleted while the
	// controller is down.
	if !slices.Contains(b.Finalizers, bundle.Finalizer) {
		t.Fatalf("Bundle has no %s finalizer: %v", bundle.Finalizer, b.Finalizers)
	}
	if err := mgmt.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := bundleDeployment(t, plainName, b.Name); !isNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %w", err)
		}
		if present(t, "default", "deleted")[plainName] {
			return fmt.Errorf("ConfigMap still downstream")
		}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: content}, &fleetv1alpha1.BundleContent{}); !isNotFound(err) {
			return fmt.Errorf("content %s still there: %w", content, err)
		}
		return nil
	})
}

// TestWorkloadReadiness: a BundleDeployment is ready when its workloads are, not when they
// exist. A Deployment whose pod cannot be scheduled is reported not ready, naming it and what
// is missing, at the BundleDeployment and in the Bundle's summary; fixing it makes both ready.
func TestWorkloadReadiness(t *testing.T) {
	ctx := t.Context()
	deployment := func(nodeSelector map[string]string) *appsv1.Deployment {
		labels := map[string]string{"app": "web-ready"}
		return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web-ready"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web:1"}},
						NodeSelector: nodeSelector, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}}}
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "web-ready"},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: "default",
			Resources: raw(t, deployment(map[string]string{"drover.io/test-pool": "none"})),
			Targets:   []fleetv1alpha1.BundleTarget{{ClusterName: fullName}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
	bdState := func(want func(*fleetv1alpha1.BundleDeployment) error) {
		t.Helper()
		waitBundleDeployment(t, fullName, b.Name, 60*time.Second, want)
	}

	t.Run("unschedulable pod: not ready, named", func(t *testing.T) {
		bdState(func(bd *fleetv1alpha1.BundleDeployment) error {
			c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionReady)
			if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || bd.Status.Ready || c == nil ||
				c.Reason != fleetv1alpha1.ReasonResourcesNotReady || !strings.Contains(c.Message, "Deployment default/web-ready: 0/1 replicas available") ||
				// Why, from its pod, as kubectl describe would say (the agent's drift pass).
				!strings.Contains(c.Message, "Unschedulable") || !strings.Contains(c.Message, "pod web-ready-") {
				return fmt.Errorf("status %+v", bd.Status)
			}
			if len(bd.Status.Resources) != 1 || bd.Status.Resources[0].State != deployer.StateNotReady {
				return fmt.Errorf("resources %+v", bd.Status.Resources)
			}
			return nil
		})
		waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
			if s := got.Status.Summary; s.NotReady != 1 || s.Ready != 0 || len(s.NonReadyClusters) != 1 || !strings.Contains(s.NonReadyClusters[0].Message, "web-ready") {
				return fmt.Errorf("bundle summary %+v", s)
			}
			return nil
		})
		ev := bundleEvent(t, b.Name, fleetv1alpha1.EventResourcesNotReady)
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "Cluster "+fullName+": ") || !strings.Contains(ev.Note, "Deployment default/web-ready") {
			t.Errorf("ResourcesNotReady event %s %q", ev.Type, ev.Note)
		}
		// Past the grace the Bundle itself is not "a rollout on its way" (Pending) any more.
		waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
			if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Reason != fleetv1alpha1.ReasonResourcesNotReady {
				return fmt.Errorf("Ready condition %+v, want %s", c, fleetv1alpha1.ReasonResourcesNotReady)
			}
			return nil
		})
		if got := metric(t, "drover_bundle_deployments", map[string]string{"state": "not_ready"}); got < 1 {
			t.Errorf("drover_bundle_deployments{state=not_ready} = %v", got)
		}
	})
	t.Run("schedulable again: ready", func(t *testing.T) {
		patchBundle(t, b, func(b *fleetv1alpha1.Bundle) { b.Spec.Resources = raw(t, deployment(nil)) })
		bdState(func(bd *fleetv1alpha1.BundleDeployment) error {
			if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || !bd.Status.Ready {
				return fmt.Errorf("status %+v", bd.Status)
			}
			return nil
		})
	})
}

// waitBundleDeployment polls cluster's BundleDeployment name until want accepts it.
func waitBundleDeployment(t *testing.T, cluster, name string, timeout time.Duration, want func(*fleetv1alpha1.BundleDeployment) error) {
	t.Helper()
	eventually(t, timeout, func() error {
		bd, err := bundleDeployment(t, cluster, name)
		if err != nil {
			return err
		}
		return want(bd)
	})
}

// waitBundle polls Bundle b until want accepts it.
func waitBundle(t *testing.T, b *fleetv1alpha1.Bundle, timeout time.Duration, want func(*fleetv1alpha1.Bundle) error) {
	t.Helper()
	eventually(t, timeout, func() error {
		got := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
			return err
		}
		return want(got)
	})
}

// bundleReadyOn1 accepts a Bundle ready on its one cluster.
func bundleReadyOn1(got *fleetv1alpha1.Bundle) error {
	if s := got.Status.Summary; s.Ready != 1 || !meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ConditionReady) {
		return fmt.Errorf("bundle summary %+v", s)
	}
	return nil
}

// testCRD is a CustomResourceDefinition of kind in group, version v1, whose spec (and, with a
// status subresource, status) take any fields. Its plural is the kind lowercased plus "s".
func testCRD(group, kind, scope string, statusSubresource bool) *unstructured.Unstructured {
	singular := strings.ToLower(kind)
	props := map[string]any{"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	version := map[string]any{"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": props}}}
	if statusSubresource {
		props["status"] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": singular + "s." + group},
		"spec": map[string]any{"group": group, "scope": scope,
			"names":    map[string]any{"plural": singular + "s", "singular": singular, "kind": kind, "listKind": kind + "List"},
			"versions": []any{version}},
	}}
}
