package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/helmchart"
	"github.com/droverhq/drover/internal/registration/local"
)

// helmHistory is `helm history NAME -n namespace` on the plain cluster with Helm's SDK: the
// statuses of the release's revisions, oldest first (nil when `helm list -a` does not show it).
func helmHistory(t *testing.T, namespace, name string) ([]string, error) {
	t.Helper()
	kc, err := local.Kubeconfig(plain.Config)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, kc, 0o600); err != nil {
		return nil, err
	}
	settings := cli.New()
	settings.KubeConfig = file
	settings.SetNamespace(namespace)
	cfg := action.NewConfiguration()
	if err := cfg.Init(settings.RESTClientGetter(), namespace, "secret"); err != nil {
		return nil, err
	}
	list := action.NewList(cfg)
	list.All = true
	rels, err := list.Run()
	if err != nil {
		return nil, err
	}
	listed := false
	for _, r := range rels {
		if a, err := release.NewAccessor(r); err == nil && a.Name() == name {
			listed = true
		}
	}
	if !listed {
		return nil, nil
	}
	hist, err := action.NewHistory(cfg).Run(name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range hist {
		a, err := release.NewAccessor(r)
		if err != nil {
			return nil, err
		}
		out = append(out, a.Status())
	}
	return out, nil
}

// TestHelmBundle: a Bundle with spec.helm is installed by the agent as a Helm release (listed
// by Helm's SDK downstream, its resources in the BundleDeployment's status); new values upgrade
// it (revision 2); an upgrade the API server rejects is Applied=False naming the release, with
// the password value that caused it hidden, and revision 2 stays deployed; deleting the Bundle
// uninstalls the release.
func TestHelmBundle(t *testing.T) {
	ctx := t.Context()
	const ns = "helm-bundle"
	chart, err := helmchart.Package(map[string][]byte{
		"Chart.yaml":  []byte("apiVersion: v2\nname: settings\nversion: 1.0.0\n"),
		"values.yaml": []byte("value: default\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  value: {{ .Values.value | quote }}\n" +
			"{{- with .Values.db }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .password }}\n{{- end }}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	values := func(v map[string]any) *runtime.RawExtension {
		b, _ := json.Marshal(v)
		return &runtime.RawExtension{Raw: b}
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "helm-settings"},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: ns,
			Helm:    &fleetv1alpha1.BundleHelm{Chart: chart, Values: values(map[string]any{"value": "one"})},
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })
	setValues := func(v map[string]any) {
		eventually(t, 10*time.Second, func() error {
			if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			b.Spec.Helm.Values = values(v)
			return mgmt.Client.Update(ctx, b)
		})
	}
	wantRelease := func(statuses []string, value string) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			got, err := helmHistory(t, ns, b.Name)
			if err != nil {
				return err
			}
			if strings.Join(got, ",") != strings.Join(statuses, ",") {
				return fmt.Errorf("release history %v, want %v", got, statuses)
			}
			cm, err := plain.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, b.Name+"-cfg", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cm.Data["value"] != value {
				return fmt.Errorf("ConfigMap value %q, want %q", cm.Data["value"], value)
			}
			return nil
		})
	}

	wantRelease([]string{"deployed"}, "one")
	waitBundleDeployment(t, plainName, b.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID || !bd.Status.Ready {
			return fmt.Errorf("status %+v", bd.Status)
		}
		if len(bd.Status.Resources) != 1 || bd.Status.Resources[0].Kind != "ConfigMap" || bd.Status.Resources[0].Namespace != ns {
			return fmt.Errorf("resources %+v, want the release's ConfigMap", bd.Status.Resources)
		}
		return nil
	})

	setValues(map[string]any{"value": "two"})
	wantRelease([]string{"superseded", "deployed"}, "two")

	const password = "Hunter2_Secret"
	setValues(map[string]any{"value": "three", "db": map[string]any{"password": password}})
	waitBundleDeployment(t, plainName, b.Name, 60*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, fleetv1alpha1.ConditionApplied)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonApplyFailed || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Applied condition %+v, want False/ApplyFailed", c)
		}
		if !strings.Contains(c.Message, "Helm release "+ns+"/"+b.Name) || !strings.Contains(c.Message, "(redacted)") {
			return fmt.Errorf("Applied message %q does not name the release or hide the value", c.Message)
		}
		if strings.Contains(fmt.Sprint(bd.Status), password) {
			return fmt.Errorf("the password is in the BundleDeployment's status: %+v", bd.Status)
		}
		return nil
	})
	got, err := helmHistory(t, ns, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[1] != "deployed" {
		t.Errorf("release history %v: revision 2 should stay deployed", got)
	}
	bundle := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(b), bundle); err != nil {
		t.Fatal(err)
	}
	// The failure is an Event too (once), naming the cluster, without the value.
	if ev := bundleEvent(t, b.Name, fleetv1alpha1.ReasonApplyFailed); !strings.Contains(ev.Note, "cluster "+plainName+": ") ||
		!strings.Contains(ev.Note, "Helm release "+ns+"/"+b.Name) || strings.Contains(ev.Note, password) {
		t.Errorf("ApplyFailed event %q, want the cluster and the release, without the value", ev.Note)
	}
	if strings.Contains(fmt.Sprint(bundle.Status), password) {
		t.Errorf("the password is in the Bundle's status: %+v", bundle.Status)
	}

	if err := mgmt.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		got, err := helmHistory(t, ns, b.Name)
		if err != nil {
			return err
		}
		if got != nil {
			return fmt.Errorf("release still listed after the Bundle was deleted: %v", got)
		}
		return nil
	})
}

// TestTemplatedValuesWaitForTheAgent: a Bundle with templated Helm values reaches an agent only
// when the agent reports that it renders them (status.agent.features). A cluster whose agent is
// older (it would install "${ .ClusterName }" literally) keeps what it runs, and the Bundle says
// which clusters wait and why; once its agent reports the feature, the cluster gets its values.
// The suite's real agent reports it with its heartbeat, so its cluster is deployed at once. A
// change of a Cluster's spec.templateValues (.ClusterValues) re-renders its values.
func TestTemplatedValuesWaitForTheAgent(t *testing.T) {
	ctx := t.Context()
	const ns, oldName = "tpl-agent", "old-agent"
	beat := fakeAgent(t, oldName)
	beat("")

	chart, err := helmchart.Package(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: settings\nversion: 1.0.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  value: {{ .Values.value | quote }}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "tpl-agent"},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: ns,
			Helm: &fleetv1alpha1.BundleHelm{Chart: chart, TemplateValues: true,
				Values: &runtime.RawExtension{Raw: []byte(`{"value":"${ .ClusterName }","host":"${ get .ClusterValues \"host\" | default \"none\" }"}`)}},
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}, {ClusterName: oldName}}}}
	if err := mgmt.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), b) })

	waitBundle(t, b, 60*time.Second, func(got *fleetv1alpha1.Bundle) error {
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonAgentUpgradeRequired || c.ObservedGeneration != got.Generation ||
			!strings.Contains(c.Message, "cluster "+oldName) || !strings.Contains(c.Message, "(v0.1.0)") || strings.Contains(c.Message, plainName) {
			return fmt.Errorf("Ready %+v, want False/AgentUpgradeRequired naming %s and its agent's version only", c, oldName)
		}
		if s := got.Status.Summary; s.Pending != 1 || len(s.NonReadyClusters) != 1 || s.NonReadyClusters[0].Name != oldName ||
			s.NonReadyClusters[0].State != fleetv1alpha1.ReasonAgentUpgradeRequired {
			return fmt.Errorf("summary %+v, want %s pending for its agent", s, oldName)
		}
		return nil
	})
	// The current agent got its own values and installed them.
	eventually(t, 60*time.Second, func() error {
		cm, err := plain.Clientset.CoreV1().ConfigMaps(ns).Get(ctx, b.Name+"-cfg", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data["value"] != plainName {
			return fmt.Errorf("value %q on %s, want the rendered %q", cm.Data["value"], plainName, plainName)
		}
		return nil
	})
	if _, err := bundleDeployment(t, oldName, b.Name); !apierrors.IsNotFound(err) {
		t.Fatalf("the old agent's cluster got a BundleDeployment it would install literally (err %v)", err)
	}

	// Upgraded: its agent reports the feature; the cluster gets its own rendered values.
	beat(`,"features":["` + fleetv1alpha1.AgentFeatureHelmValues + `"],"featuresSeen":"NOW"`)
	waitBundleDeployment(t, oldName, b.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if v := bd.Spec.Options.HelmValues; v == nil || string(v.Raw) != `{"host":"none","value":"`+oldName+`"}` {
			return fmt.Errorf("helmValues %v, want rendered for %s", v, oldName)
		}
		return nil
	})
	// The cluster's own template values (.ClusterValues, Fleet's Cluster spec.templateValues):
	// a change re-renders its values.
	patchCluster(t, oldName, func(c *fleetv1alpha1.Cluster) {
		c.Spec.TemplateValues = &runtime.RawExtension{Raw: []byte(`{"host":"edge.example.com"}`)}
	})
	waitBundleDeployment(t, oldName, b.Name, 30*time.Second, func(bd *fleetv1alpha1.BundleDeployment) error {
		if v := bd.Spec.Options.HelmValues; v == nil || string(v.Raw) != `{"host":"edge.example.com","value":"`+oldName+`"}` {
			return fmt.Errorf("helmValues %v, want the cluster's templateValues' host", v)
		}
		return nil
	})
	waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil && c.Reason == fleetv1alpha1.ReasonAgentUpgradeRequired {
			return fmt.Errorf("Ready %+v still waits for the agent", c)
		}
		return nil
	})

	// Rolled back: the older agent's check-ins do not report features, and the newer one's
	// list left in the status does not count for it. The cluster keeps what it runs.
	bd, err := bundleDeployment(t, oldName, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	beat("")
	waitBundle(t, b, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		if c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady); c == nil || c.Reason != fleetv1alpha1.ReasonAgentUpgradeRequired {
			return fmt.Errorf("Ready %+v after the rollback, want AgentUpgradeRequired", c)
		}
		return nil
	})
	if after, err := bundleDeployment(t, oldName, b.Name); err != nil || after.Generation != bd.Generation {
		t.Errorf("the rolled-back agent's BundleDeployment changed (%v): generation %d -> %d", err, bd.Generation, after.Generation)
	}

	// helm.valuesFrom needs the agent to read it (an older one would install without those
	// values): the rolled-back agent's cluster waits, the current agent's is deployed.
	vf := &fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "vf-agent"},
		Spec: fleetv1alpha1.BundleSpec{DefaultNamespace: ns,
			Helm:    &fleetv1alpha1.BundleHelm{Chart: chart, ValuesFrom: []fleetv1alpha1.HelmValuesFrom{{ConfigMapKeyRef: &fleetv1alpha1.ValuesKeyRef{Name: "site"}}}},
			Targets: []fleetv1alpha1.BundleTarget{{ClusterName: plainName}, {ClusterName: oldName}}}}
	if err := mgmt.Client.Create(ctx, vf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), vf) })
	waitBundle(t, vf, 30*time.Second, func(got *fleetv1alpha1.Bundle) error {
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionReady)
		if c == nil || c.Reason != fleetv1alpha1.ReasonAgentUpgradeRequired || !strings.Contains(c.Message, "helm.valuesFrom") ||
			!strings.Contains(c.Message, "cluster "+oldName) || strings.Contains(c.Message, plainName) {
			return fmt.Errorf("Ready %+v, want AgentUpgradeRequired for helm.valuesFrom on %s only", c, oldName)
		}
		return nil
	})
	waitBundleDeployment(t, plainName, vf.Name, 30*time.Second, func(*fleetv1alpha1.BundleDeployment) error { return nil })
	if _, err := bundleDeployment(t, oldName, vf.Name); !apierrors.IsNotFound(err) {
		t.Errorf("the old agent's cluster got a BundleDeployment with helm.valuesFrom (err %v)", err)
	}
}
