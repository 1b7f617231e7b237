package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/cli"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/test/envtest"
)

const secondName = "second"

// startSecond starts a second downstream API server, imported as the Cluster "second" labelled
// env=prod, with its agent running here; "plain" has no env label. Both go when t ends.
func startSecond(t *testing.T) *envtest.Cluster {
	t.Helper()
	return startSecondAs(t, secondName)
}

// startSecondAs is startSecond with another Cluster name, for tests running in parallel.
func startSecondAs(t *testing.T, secondName string) *envtest.Cluster {
	t.Helper()
	c, err := envtest.Start(secondName, envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kc, err := local.Kubeconfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "kc-" + secondName}, Data: map[string][]byte{fleetv1alpha1.KeyKubeconfig: kc}}
	cl := &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: secondName, Labels: map[string]string{"env": "prod"}},
		Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: secret.Name}}
	for _, o := range []client.Object{secret, cl} {
		if err := mgmt.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = mgmt.Client.Delete(context.Background(), cl)
		_ = mgmt.Client.Delete(context.Background(), secret)
	})
	eventually(t, 180*time.Second, func() error {
		got := &fleetv1alpha1.Cluster{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(cl), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ConditionImported) {
			return fmt.Errorf("cluster %s not imported: %+v", secondName, got.Status.Conditions)
		}
		return nil
	})
	go func() {
		_ = agent.Run(ctx, agent.Options{Config: c.Config, Namespace: agentNS, HeartbeatInterval: time.Second,
			RetryMin: time.Second, RetryMax: 4 * time.Second, Identity: "test-" + secondName, DriftInterval: 5 * time.Second})
	}()
	eventually(t, 60*time.Second, func() error {
		got := &fleetv1alpha1.Cluster{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(cl), got); err != nil {
			return err
		}
		if got.Status.Agent.LastSeen == nil {
			return fmt.Errorf("agent of %s never checked in", secondName)
		}
		return nil
	})
	return c
}

// helmOn is Helm's SDK against a downstream cluster, as `helm -n namespace --kubeconfig ...`.
func helmOn(t *testing.T, c *envtest.Cluster, namespace string) *action.Configuration {
	t.Helper()
	kc, err := local.Kubeconfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(file, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	settings := cli.New()
	settings.KubeConfig = file
	settings.SetNamespace(namespace)
	cfg := action.NewConfiguration()
	if err := cfg.Init(settings.RESTClientGetter(), namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// configMapOn returns data.value of ConfigMap ns/name on c ("" if absent).
func configMapOn(ctx context.Context, c *envtest.Cluster, ns, name string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return cm.Data["value"], nil
}

// wantOn checks ConfigMaps on each cluster: "ns/name" → value ("" means absent).
func wantOn(ctx context.Context, want map[*envtest.Cluster]map[string]string) error {
	for c, cms := range want {
		for k, v := range cms {
			ns, name, _ := strings.Cut(k, "/")
			got, err := configMapOn(ctx, c, ns, name)
			if err != nil {
				return err
			}
			if got != v {
				return fmt.Errorf("ConfigMap %s on %s: value %q, want %q", k, c.Name, got, v)
			}
		}
	}
	return nil
}

// TestGitRepoTargetCustomizations: one GitRepo targets two downstream clusters, "plain" and
// "second" (env=prod); drover.yaml's targetCustomizations give second other Helm values (its
// release's objects differ, and a change of the customization upgrades second's release only)
// and another Kustomize overlay; a Fleet repository's fleet.yaml deploys with its
// customization's namespace, its unsupported keys named in the ConfigSupported condition.
func TestGitRepoTargetCustomizations(t *testing.T) {
	t.Parallel()
	second := startSecond(t)
	both := func(s *fleetv1alpha1.GitRepoSpec) {
		s.Targets = []fleetv1alpha1.BundleTarget{{ClusterName: plainName}, {ClusterName: secondName}}
	}

	t.Run("per-target Helm values", func(t *testing.T) {
		const ns = "tc-helm"
		r := newRepo(t, "tc-helm", false)
		files := webChart("web", "0.1.0")
		cfg := func(prodValue string) string {
			return "defaultNamespace: " + ns + "\nhelm:\n  releaseName: web\n  values: {value: everyone}\n" +
				"targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  helm:\n    values: {value: " + prodValue + "}\n"
		}
		files["web/drover.yaml"] = cfg("prod-only")
		c1 := r.commit("chart", files)
		gr := newGitRepo(t, "tc-helm", r, func(s *fleetv1alpha1.GitRepoSpec) { both(s); s.Paths = []string{"web"} })
		eventually(t, 90*time.Second, func() error { return wantSynced(t, gr, c1, gitrepo.BundleName("tc-helm", "web")) })
		wantReleaseOn := func(c *envtest.Cluster, statuses []string, value string) {
			t.Helper()
			hc := helmOn(t, c, ns)
			eventually(t, 60*time.Second, func() error {
				listed, got, err := releaseState(hc, "web")
				if err != nil {
					return err
				}
				if !listed || strings.Join(got, ",") != strings.Join(statuses, ",") {
					return fmt.Errorf("release web on %s: listed %v history %v, want %v", c.Name, listed, got, statuses)
				}
				return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{c: {ns + "/web-web": value}})
			})
		}
		wantReleaseOn(plain, []string{"deployed"}, "everyone")
		wantReleaseOn(second, []string{"deployed"}, "prod-only")

		// A change of the prod customization upgrades second's release; plain's stays at
		// revision 1, its BundleDeployment untouched.
		bdPlain := &fleetv1alpha1.BundleDeployment{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: clusterNamespace(t, plainName), Name: gitrepo.BundleName("tc-helm", "web")}, bdPlain); err != nil {
			t.Fatal(err)
		}
		c2 := r.commit("prod value", map[string]string{"web/drover.yaml": cfg("prod-two")})
		eventually(t, 60*time.Second, func() error { return wantSynced(t, gr, c2, gitrepo.BundleName("tc-helm", "web")) })
		wantReleaseOn(second, []string{"superseded", "deployed"}, "prod-two")
		after := &fleetv1alpha1.BundleDeployment{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(bdPlain), after); err != nil {
			t.Fatal(err)
		}
		if after.Generation != bdPlain.Generation || after.Spec.DeploymentID != bdPlain.Spec.DeploymentID {
			t.Errorf("plain's BundleDeployment was rewritten: generation %d -> %d, deployment %s -> %s",
				bdPlain.Generation, after.Generation, bdPlain.Spec.DeploymentID, after.Spec.DeploymentID)
		}
		wantReleaseOn(plain, []string{"deployed"}, "everyone")
	})

	t.Run("Fleet values templating", func(t *testing.T) {
		// A fleet.yaml's Helm values are a template rendered per cluster, as in Fleet: each
		// cluster's release gets its own values, a label change re-renders that cluster's
		// only, and a template that fails keeps what runs and says why on the Bundle.
		const ns = "tc-tpl"
		bundleKey := client.ObjectKey{Namespace: ws, Name: gitrepo.BundleName("tc-tpl", "web")}
		r := newRepo(t, "tc-tpl", false)
		files := webChart("web", "0.1.0")
		fleet := func(value string) string {
			return "defaultNamespace: " + ns + "\nhelm:\n  releaseName: web\n  values:\n    value: '" + value + "'\n"
		}
		files["web/fleet.yaml"] = fleet(`${ .ClusterName }-${ get .ClusterLabels "tier" | default "none" }`)
		c1 := r.commit("chart", files)
		gr := newGitRepo(t, "tc-tpl", r, func(s *fleetv1alpha1.GitRepoSpec) { both(s); s.Paths = []string{"web"} })
		eventually(t, 90*time.Second, func() error { return wantSynced(t, gr, c1, bundleKey.Name) })
		eventually(t, 60*time.Second, func() error {
			return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{plain: {ns + "/web-web": "plain-none"}, second: {ns + "/web-web": "second-none"}})
		})
		bdPlain := &fleetv1alpha1.BundleDeployment{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: clusterNamespace(t, plainName), Name: bundleKey.Name}, bdPlain); err != nil {
			t.Fatal(err)
		}

		cl := &fleetv1alpha1.Cluster{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: secondName}, cl); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cl.DeepCopy())
		cl.Labels["tier"] = "gold"
		if err := mgmt.Client.Patch(t.Context(), cl, patch); err != nil {
			t.Fatal(err)
		}
		hc := helmOn(t, second, ns)
		eventually(t, 60*time.Second, func() error {
			if _, got, err := releaseState(hc, "web"); err != nil || strings.Join(got, ",") != "superseded,deployed" {
				return fmt.Errorf("release web on second: history %v (%w), want an upgrade", got, err)
			}
			return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{second: {ns + "/web-web": "second-gold"}})
		})
		after := &fleetv1alpha1.BundleDeployment{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(bdPlain), after); err != nil {
			t.Fatal(err)
		}
		if after.Generation != bdPlain.Generation {
			t.Errorf("plain's BundleDeployment was rewritten for second's label: generation %d -> %d", bdPlain.Generation, after.Generation)
		}

		c2 := r.commit("a label no cluster has", map[string]string{"web/fleet.yaml": fleet(`${ .ClusterLabels.region }`)})
		eventually(t, 60*time.Second, func() error {
			b := &fleetv1alpha1.Bundle{}
			if err := mgmt.Client.Get(t.Context(), bundleKey, b); err != nil {
				return err
			}
			c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady)
			if gotCommit := b.Annotations[fleetv1alpha1.GitRepoCommitAnnotation]; c == nil || c.Reason != fleetv1alpha1.ReasonTemplateFailed ||
				!strings.Contains(c.Message, `value: map has no entry for key "region"`) || gotCommit != c2 {
				return fmt.Errorf("bundle at commit %s, Ready %+v; want TemplateFailed naming the key", gotCommit, c)
			}
			return nil
		})
		if err := wantOn(t.Context(), map[*envtest.Cluster]map[string]string{plain: {ns + "/web-web": "plain-none"}, second: {ns + "/web-web": "second-gold"}}); err != nil {
			t.Errorf("a failing template changed what runs: %v", err)
		}
	})

	t.Run("Fleet templates directory", func(t *testing.T) {
		// A fleet.yaml path with templates/ and no chart is a Helm release in Fleet: its
		// templates get the fleet.yaml's values (prod's customization on second), the path's
		// other manifests are deployed as they are, "{{" and all.
		const ns = "tc-templates"
		r := newRepo(t, "tc-templates", false)
		c1 := r.commit("templates", map[string]string{
			"app/fleet.yaml": "defaultNamespace: " + ns + "\nhelm:\n  releaseName: app\n  values: {user: everyone}\n" +
				"targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  helm: {values: {user: prod-user}}\n",
			"app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  value: {{ .Values.user | quote }}\n",
			"app/plain.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  value: '{{ as written }}'\n",
		})
		gr := newGitRepo(t, "tc-templates", r, func(s *fleetv1alpha1.GitRepoSpec) { both(s); s.Paths = []string{"app"} })
		eventually(t, 90*time.Second, func() error {
			if err := wantSynced(t, gr, c1, gitrepo.BundleName("tc-templates", "app")); err != nil {
				return err
			}
			return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{
				plain:  {ns + "/app-cfg": "everyone", ns + "/plain": "{{ as written }}"},
				second: {ns + "/app-cfg": "prod-user", ns + "/plain": "{{ as written }}"},
			})
		})
		// One release holds both: helm list on the downstream cluster shows it.
		if listed, history, err := releaseState(helmOn(t, plain, ns), "app"); err != nil || !listed || strings.Join(history, ",") != "deployed" {
			t.Errorf("release app on plain: listed %v, history %v (%v); want one deployed revision", listed, history, err)
		}
	})

	t.Run("Kustomize overlay per target", func(t *testing.T) {
		r := newRepo(t, "tc-kustomize", false)
		c1 := r.commit("overlays", map[string]string{
			"app/base/kustomization.yaml":          "resources: [cm.yaml]\n",
			"app/base/cm.yaml":                     configMapYAML("default", "app", "base"),
			"app/overlays/dev/kustomization.yaml":  "resources: [../../base]\nnamePrefix: dev-\n",
			"app/overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\npatches:\n- path: patch.yaml\n",
			"app/overlays/prod/patch.yaml":         configMapYAML("default", "app", "prod-patched"),
			"app/drover.yaml": "kustomize: {dir: overlays/dev}\ntargetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n" +
				"  kustomize: {dir: overlays/prod}\n",
		})
		gr := newGitRepo(t, "tc-kustomize", r, func(s *fleetv1alpha1.GitRepoSpec) { both(s); s.Paths = []string{"app"} })
		eventually(t, 90*time.Second, func() error {
			if err := wantSynced(t, gr, c1, gitrepo.BundleName("tc-kustomize", "app")); err != nil {
				return err
			}
			return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{
				plain:  {"default/dev-app": "base", "default/prod-app": ""},
				second: {"default/prod-app": "prod-patched", "default/dev-app": ""},
			})
		})
	})

	t.Run("Fleet repository", func(t *testing.T) {
		r := newRepo(t, "tc-fleet", false)
		c1 := r.commit("fleet", map[string]string{
			"apps/fleet.yaml": "", // an empty fleet.yaml: a Bundle with Fleet's defaults
			"apps/ns.yaml":    namespaceYAML("fleet-dev") + "---\n" + namespaceYAML("fleet-prod"),
			"apps/web/fleet.yaml": "defaultNamespace: fleet-dev\n" +
				"targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  namespace: fleet-prod\n  helm: {takeOwnership: true}\n" +
				"rolloutStrategy:\n  partitions: [{name: canary, clusterName: plain}]\n" +
				"dependsOn:\n- name: tc-fleet-apps\n",
			"apps/web/cm.yaml": configMapYAML("", "web", "fleet"),
		})
		gr := newGitRepo(t, "tc-fleet", r, func(s *fleetv1alpha1.GitRepoSpec) { both(s); s.Paths = []string{"apps"} })
		eventually(t, 90*time.Second, func() error {
			if err := wantSynced(t, gr, c1, gitrepo.BundleName("tc-fleet", "apps"), gitrepo.BundleName("tc-fleet", "apps/web")); err != nil {
				return err
			}
			return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{
				plain:  {"fleet-dev/web": "fleet", "fleet-prod/web": ""},
				second: {"fleet-prod/web": "fleet", "fleet-dev/web": ""},
			})
		})
		got, err := getGitRepo(t, gr)
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionConfigSupported)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonUnsupportedFleetKeys {
			t.Fatalf("ConfigSupported condition %+v, want False/UnsupportedFleetKeys", c)
		}
		for _, part := range []string{"path apps/web", "apps/web/fleet.yaml", "rolloutStrategy.partitions", "targetCustomizations[0].helm.takeOwnership"} {
			if !strings.Contains(c.Message, part) {
				t.Errorf("ConfigSupported message %q does not name %s", c.Message, part)
			}
		}
	})
}

// bundleOn reports whether Bundle name has a BundleDeployment on the Cluster clusterName.
func bundleOn(t *testing.T, clusterName, name string) (bool, error) {
	bd := &fleetv1alpha1.BundleDeployment{}
	err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: clusterNamespace(t, clusterName), Name: name}, bd)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// wantBundleOn checks which clusters have a BundleDeployment of each Bundle once the Bundle
// controller has seen the Bundle's current generation: Bundle name → cluster → present.
func wantBundleOn(t *testing.T, want map[string]map[string]bool) error {
	for name, clusters := range want {
		b := &fleetv1alpha1.Bundle{}
		if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: name}, b); err != nil {
			return err
		}
		targeted := 0
		for _, on := range clusters {
			if on {
				targeted++
			}
		}
		if b.Status.ObservedGeneration != b.Generation || b.Status.Summary.DesiredReady != targeted {
			return fmt.Errorf("Bundle %s: observed generation %d of %d, %d clusters targeted, want %d", name,
				b.Status.ObservedGeneration, b.Generation, b.Status.Summary.DesiredReady, targeted)
		}
		for c, on := range clusters {
			got, err := bundleOn(t, c, name)
			if err != nil {
				return err
			}
			if got != on {
				return fmt.Errorf("Bundle %s on cluster %s: BundleDeployment present %v, want %v", name, c, got, on)
			}
		}
	}
	return nil
}

// TestGitRepoFleetNarrowing: fleet.yaml keys that narrow where content goes keep drover from
// deploying where Fleet would not. The GitRepo targets "plain" and "second" (env=prod): a
// doNotDeploy customization for env=prod, overrideTargets selecting env=prod only, a
// customization needing a ClusterGroup (left out: second gets the path's content as it is),
// and a paused path whose Bundle is new (no cluster, also after a later commit) each deploy
// exactly where Fleet would.
func TestGitRepoFleetNarrowing(t *testing.T) {
	t.Parallel()
	second := startSecondAs(t, "second-fn")
	r := newRepo(t, "fleet-narrow", false)
	files := map[string]string{
		"apps/dnd/fleet.yaml": "targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  doNotDeploy: true\n",
		"apps/dnd/cm.yaml":    configMapYAML("default", "fn-dnd", "dnd"),
		"apps/override/fleet.yaml": "overrideTargets:\n- clusterSelector: {matchLabels: {env: prod}}\n" +
			"- clusterGroup: everyone\n",
		"apps/override/cm.yaml": configMapYAML("default", "fn-override", "override"),
		"apps/grouped/fleet.yaml": "targetCustomizations:\n- name: grouped\n  clusterGroup: g\n  clusterSelector: {matchLabels: {env: prod}}\n" +
			"  namespace: kube-public\n",
		"apps/grouped/cm.yaml":   configMapYAML("default", "fn-grouped", "grouped"),
		"apps/paused/fleet.yaml": "paused: true\n",
		"apps/paused/cm.yaml":    configMapYAML("default", "fn-paused", "one"),
	}
	c1 := r.commit("fleet", files)
	gr := newGitRepo(t, "fleet-narrow", r, func(s *fleetv1alpha1.GitRepoSpec) {
		s.Targets = []fleetv1alpha1.BundleTarget{{ClusterName: plainName}, {ClusterName: second.Name}}
		s.Paths = []string{"apps"}
	})
	name := func(p string) string { return gitrepo.BundleName("fleet-narrow", p) }
	bundles := []string{name("apps/dnd"), name("apps/grouped"), name("apps/override"), name("apps/paused")}
	want := map[string]map[string]bool{
		name("apps/dnd"):      {plainName: true, second.Name: false},
		name("apps/override"): {plainName: false, second.Name: true},
		name("apps/grouped"):  {plainName: true, second.Name: true},
		name("apps/paused"):   {plainName: false, second.Name: false},
	}
	eventually(t, 120*time.Second, func() error {
		if err := wantSynced(t, gr, c1, bundles...); err != nil {
			return err
		}
		if err := wantBundleOn(t, want); err != nil {
			return err
		}
		return wantOn(t.Context(), map[*envtest.Cluster]map[string]string{
			plain:  {"default/fn-dnd": "dnd", "default/fn-override": "", "default/fn-grouped": "grouped", "default/fn-paused": ""},
			second: {"default/fn-dnd": "", "default/fn-override": "override", "default/fn-grouped": "grouped", "kube-public/fn-grouped": "", "default/fn-paused": ""},
		})
	})
	got, err := getGitRepo(t, gr)
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionConfigSupported)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonUnsupportedFleetKeys {
		t.Fatalf("ConfigSupported condition %+v, want False/UnsupportedFleetKeys", c)
	}
	for _, part := range []string{"apps/grouped/fleet.yaml", "targetCustomizations[0] (matches no cluster: drover has no ClusterGroups",
		"overrideTargets[1] (matches no cluster", "apps/paused/fleet.yaml: used with another meaning than Fleet's: paused ("} {
		if !strings.Contains(c.Message, part) {
			t.Errorf("ConfigSupported message %q does not name %s", c.Message, part)
		}
	}
	if strings.Contains(c.Message, "doNotDeploy") || strings.Contains(c.Message, "apps/dnd") {
		t.Errorf("ConfigSupported message %q reports doNotDeploy, which drover uses", c.Message)
	}

	// A later commit of the still paused path keeps its Bundle targeting no cluster.
	c2 := r.commit("paused change", map[string]string{"apps/paused/cm.yaml": configMapYAML("default", "fn-paused", "two")})
	eventually(t, 60*time.Second, func() error {
		if err := wantSynced(t, gr, c2, bundles...); err != nil {
			return err
		}
		return wantBundleOn(t, want)
	})
	b := &fleetv1alpha1.Bundle{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: name("apps/paused")}, b); err != nil {
		t.Fatal(err)
	}
	if len(b.Spec.Targets) != 0 || !b.Spec.Rollout.Paused || b.Annotations[fleetv1alpha1.GitRepoCommitAnnotation] != c2 {
		t.Errorf("paused Bundle targets %+v rollout %+v commit %s, want no target, paused, commit %s", b.Spec.Targets, b.Spec.Rollout, b.Annotations[fleetv1alpha1.GitRepoCommitAnnotation], c2)
	}
}

// clusterNamespace is the namespace of the Cluster's BundleDeployments.
func clusterNamespace(t *testing.T, name string) string {
	t.Helper()
	c := &fleetv1alpha1.Cluster{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c.Status.Namespace
}
