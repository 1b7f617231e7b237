package charts

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
)

const ns = server.SystemNamespace

func into[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

func serverContainer(t *testing.T, objs map[string]*unstructured.Unstructured) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d := into[appsv1.Deployment](t, get(t, objs, "Deployment/"+ns+"/drover"))
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers %v", d.Spec.Template.Spec.Containers)
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

// generatedRoles are the server's generated RBAC (make generate), by kind.
func generatedRoles(t *testing.T, path string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]rbacv1.PolicyRule{}
	for doc := range strings.SplitSeq(string(b), "\n---") {
		var r rbacv1.ClusterRole // a Role has the same shape
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind != "" {
			out[r.Kind] = r.Rules
		}
	}
	return out
}

func TestDroverChartDefaults(t *testing.T) {
	t.Parallel()
	lint(t, "drover", ns, nil)
	c := load(t, "drover")
	objs := mustRender(t, c, ns, nil)
	image := "ghcr.io/droverhq/drover:" + c.AppVersion()

	d, ctr := serverContainer(t, objs)
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	if ctr.Image != image {
		t.Errorf("image %q, want %q", ctr.Image, image)
	}
	for _, arg := range []string{"server", "--leader-elect=true", "--install-crds=true", "--register-local=true", "--agent-image=" + image,
		"--agent-rollout-max-unavailable=10%", "--metrics-bind-address=:8080", "--health-probe-bind-address=$(POD_IP):8081"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("args %v lack %s", ctr.Args, arg)
		}
	}
	// Probes reach the pod IP, where the server listens.
	if i := slices.IndexFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_IP" }); i < 0 || ctr.Env[i].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("no POD_IP from status.podIP in %v", ctr.Env)
	}
	for probe, path := range map[*corev1.Probe]string{ctr.LivenessProbe: "/healthz", ctr.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" || probe.HTTPGet.Host != "" {
			t.Errorf("probe %+v, want GET %s on the health port of the pod IP", probe, path)
		}
	}
	if i := slices.IndexFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "health" }); i < 0 || ctr.Ports[i].ContainerPort != 8081 {
		t.Errorf("ports %v", ctr.Ports)
	}
	pod := d.Spec.Template.Spec
	psc, sc := pod.SecurityContext, ctr.SecurityContext
	if psc == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v", sc)
	}
	if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", ctr.Resources)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("affinity %+v, want preferred pod anti-affinity", pod.Affinity)
	}
	if pod.ServiceAccountName != "drover" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	get(t, objs, "ServiceAccount/"+ns+"/drover")

	pdb := into[policyv1.PodDisruptionBudget](t, get(t, objs, "PodDisruptionBudget/"+ns+"/drover"))
	if pdb.Spec.MinAvailable.IntValue() != 1 || !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PDB %+v", pdb.Spec)
	}
	svc := into[corev1.Service](t, get(t, objs, "Service/"+ns+"/drover-metrics"))
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service %+v", svc.Spec)
	}
	for k := range objs {
		if strings.HasPrefix(k, "ServiceMonitor/") {
			t.Errorf("%s rendered by default", k)
		}
	}

	// RBAC: the generated rules, bound to the ServiceAccount; the chart copy is current.
	want := generatedRoles(t, "../config/rbac/role.yaml")
	if !reflect.DeepEqual(generatedRoles(t, "drover/files/rbac-role.yaml"), want) {
		t.Fatal("charts/drover/files/rbac-role.yaml differs from config/rbac/role.yaml: run make generate")
	}
	cr := into[rbacv1.ClusterRole](t, get(t, objs, "ClusterRole//drover-manager"))
	if !reflect.DeepEqual(cr.Rules, want["ClusterRole"]) {
		t.Errorf("ClusterRole rules differ from the generated ones")
	}
	if rules, ok := want["Role"]; ok {
		r := into[rbacv1.Role](t, get(t, objs, "Role/"+ns+"/drover-manager"))
		if !reflect.DeepEqual(r.Rules, rules) {
			t.Errorf("Role rules differ from the generated ones")
		}
		into[rbacv1.RoleBinding](t, get(t, objs, "RoleBinding/"+ns+"/drover-manager"))
	}
	crb := into[rbacv1.ClusterRoleBinding](t, get(t, objs, "ClusterRoleBinding//drover-manager"))
	if crb.RoleRef.Name != "drover-manager" || crb.Subjects[0].Name != "drover" || crb.Subjects[0].Namespace != ns {
		t.Errorf("ClusterRoleBinding %+v", crb)
	}
	local := into[rbacv1.ClusterRoleBinding](t, get(t, objs, "ClusterRoleBinding//drover-local-agent"))
	if local.Subjects[0].Name != "drover-local-agent" || local.Subjects[0].Namespace != "drover-local" {
		t.Errorf("local agent binding %+v", local.Subjects)
	}

	cm := into[corev1.ConfigMap](t, get(t, objs, "ConfigMap/"+config.DefaultNamespace+"/"+config.DefaultName))
	if len(cm.Data) != 0 {
		t.Errorf("registration ConfigMap without settings has data %v", cm.Data)
	}
	for k, u := range objs {
		b, _ := u.MarshalJSON()
		if strings.Contains(string(b), ":latest") {
			t.Errorf("%s names a :latest image", k)
		}
	}
}

func TestDroverChartValues(t *testing.T) {
	t.Parallel()
	const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	vals := map[string]any{
		"image": "registry.example.com/drover:v9", "agentImage": "registry.example.com/drover-agent:v9",
		"replicas": 3, "installCRDs": false, "registerLocal": false, "agentRolloutMaxUnavailable": 5,
		"apiServerURL": "https://mgmt.example.com:6443", "apiServerCA": ca, "podAntiAffinity": "hard",
		"extraArgs": []any{"--hosted-workers=16"},
		"metrics":   map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
	}
	lint(t, "drover", ns, vals)
	objs := mustRender(t, load(t, "drover"), ns, vals)
	d, ctr := serverContainer(t, objs)
	if *d.Spec.Replicas != 3 || ctr.Image != "registry.example.com/drover:v9" {
		t.Errorf("replicas %d image %s", *d.Spec.Replicas, ctr.Image)
	}
	for _, arg := range []string{"--install-crds=false", "--leader-elect=true", "--register-local=false",
		"--agent-image=registry.example.com/drover-agent:v9", "--agent-rollout-max-unavailable=5", "--hosted-workers=16"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("args %v lack %s", ctr.Args, arg)
		}
	}
	if a := d.Spec.Template.Spec.Affinity.PodAntiAffinity; a == nil || len(a.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("podAntiAffinity hard: %+v", a)
	}
	cm := into[corev1.ConfigMap](t, get(t, objs, "ConfigMap/"+config.DefaultNamespace+"/"+config.DefaultName))
	if cm.Data[config.KeyAPIServerURL] != "https://mgmt.example.com:6443" || cm.Data[config.KeyAPIServerCA] != ca {
		t.Errorf("registration ConfigMap %v", cm.Data)
	}
	sm := get(t, objs, "ServiceMonitor/"+ns+"/drover")
	if sm.GetLabels()["release"] != "prom" {
		t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
	}
	if _, ok := objs["ClusterRoleBinding//drover-local-agent"]; ok {
		t.Error("registerLocal=false still binds the local agent")
	}
}

// TestDroverChartNamespace: the server keeps its lease and settings in drover-system, so the
// chart refuses another namespace instead of installing a server that cannot find them.
func TestDroverChartNamespace(t *testing.T) {
	t.Parallel()
	_, err := render(t, load(t, "drover"), "default", nil)
	if err == nil || !strings.Contains(err.Error(), "drover-system") {
		t.Fatalf("render into default: %v, want an error naming drover-system", err)
	}
}

// TestDroverChartGrafanaDashboard: grafanaDashboard.enabled renders drover's Grafana dashboard
// (config/grafana/drover.json, byte for byte) in a ConfigMap Grafana's sidecar loads; off by
// default.
func TestDroverChartGrafanaDashboard(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("../config/grafana/drover.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		vals      map[string]any
		namespace string // "" = not rendered
	}{
		{"default off", nil, ""},
		{"enabled", map[string]any{"grafanaDashboard": map[string]any{"enabled": true}}, ns},
		{"enabled elsewhere", map[string]any{"grafanaDashboard": map[string]any{"enabled": true, "namespace": "monitoring",
			"labels": map[string]any{"team": "obs"}, "annotations": map[string]any{"grafana_folder": "drover"}}}, "monitoring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			objs := mustRender(t, load(t, "drover"), ns, tc.vals)
			var found []string
			for k := range objs {
				if strings.HasPrefix(k, "ConfigMap/") && strings.HasSuffix(k, "/drover-grafana-dashboard") {
					found = append(found, k)
				}
			}
			if tc.namespace == "" {
				if len(found) > 0 {
					t.Fatalf("rendered %v", found)
				}
				return
			}
			cm := into[corev1.ConfigMap](t, get(t, objs, "ConfigMap/"+tc.namespace+"/drover-grafana-dashboard"))
			if cm.Labels["grafana_dashboard"] != "1" {
				t.Errorf("labels %v lack grafana_dashboard: \"1\"", cm.Labels)
			}
			if got := cm.Data["drover.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
				t.Errorf("drover.json differs from config/grafana/drover.json (run make generate): %d bytes, want %d", len(got), len(want))
			}
			if tc.namespace == "monitoring" && (cm.Labels["team"] != "obs" || cm.Annotations["grafana_folder"] != "drover") {
				t.Errorf("labels %v annotations %v", cm.Labels, cm.Annotations)
			}
		})
	}
}

// TestDroverChartDashboard: the dashboard is off by default (viewers paste tokens into it, and
// without TLS it is plain HTTP); turned on it is served behind a ClusterIP Service, over HTTPS
// from a TLS Secret when one is named.
func TestDroverChartDashboard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		vals     map[string]any
		port     int32 // 0: not served
		tls      string
		portName string
	}{
		{name: "default off"},
		{name: "on", vals: map[string]any{"dashboard": map[string]any{"enabled": true}}, port: 8082, portName: "http"},
		{name: "port and TLS", vals: map[string]any{"dashboard": map[string]any{"enabled": true, "port": 9443, "tls": map[string]any{"secretName": "ui-cert"}}},
			port: 9443, tls: "ui-cert", portName: "https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			objs := mustRender(t, load(t, "drover"), ns, tc.vals)
			d, ctr := serverContainer(t, objs)
			svcObj, rendered := objs["Service/"+ns+"/drover-dashboard"]
			if tc.port == 0 {
				if rendered {
					t.Error("Service drover-dashboard rendered while the dashboard is off")
				}
				for _, a := range ctr.Args {
					if strings.HasPrefix(a, "--ui-") {
						t.Errorf("arg %s while the dashboard is off", a)
					}
				}
				return
			}
			if want := fmt.Sprintf("--ui-address=:%d", tc.port); !slices.Contains(ctr.Args, want) {
				t.Errorf("args %v lack %s", ctr.Args, want)
			}
			hasTLSArgs := slices.Contains(ctr.Args, "--ui-tls-cert-file=/etc/drover/dashboard-tls/tls.crt") &&
				slices.Contains(ctr.Args, "--ui-tls-key-file=/etc/drover/dashboard-tls/tls.key")
			vol := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == tc.tls
			})
			mounted := slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/drover/dashboard-tls" && m.ReadOnly })
			if want := tc.tls != ""; hasTLSArgs != want || (vol >= 0) != want || mounted != want {
				t.Errorf("TLS %q: cert args %v, secret volume %v, mounted %v", tc.tls, hasTLSArgs, vol >= 0, mounted)
			}
			if i := slices.IndexFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "dashboard" }); i < 0 || ctr.Ports[i].ContainerPort != tc.port {
				t.Errorf("container ports %v, want dashboard %d", ctr.Ports, tc.port)
			}
			if !rendered {
				t.Fatal("no Service drover-dashboard")
			}
			svc := into[corev1.Service](t, svcObj)
			if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) || len(svc.Spec.Ports) != 1 || svc.Spec.Type != corev1.ServiceTypeClusterIP ||
				svc.Spec.Ports[0].Port != tc.port || svc.Spec.Ports[0].Name != tc.portName || svc.Spec.Ports[0].TargetPort.String() != "dashboard" {
				t.Errorf("dashboard Service %+v", svc.Spec)
			}
		})
	}
}

// TestDroverChartWebhook: webhook.enabled makes the server receive Git push webhooks on
// webhook.port (with the named Secret) and exposes them through Service drover-webhook; off by
// default.
func TestDroverChartWebhook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		vals map[string]any
		port int32 // 0: not served
		args []string
	}{
		{"default off", nil, 0, nil},
		{"enabled", map[string]any{"webhook": map[string]any{"enabled": true}}, 8090,
			[]string{"--webhook-bind-address=:8090", "--webhook-secret=drover-webhook"}},
		{"port and secret", map[string]any{"webhook": map[string]any{"enabled": true, "port": 9443, "secretName": "git-hooks",
			"service": map[string]any{"type": "LoadBalancer"}}}, 9443,
			[]string{"--webhook-bind-address=:9443", "--webhook-secret=git-hooks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			objs := mustRender(t, load(t, "drover"), ns, tc.vals)
			d, ctr := serverContainer(t, objs)
			svcObj, rendered := objs["Service/"+ns+"/drover-webhook"]
			if tc.port == 0 {
				if rendered {
					t.Error("Service drover-webhook rendered while the webhook is off")
				}
				for _, a := range ctr.Args {
					if strings.HasPrefix(a, "--webhook") {
						t.Errorf("arg %s while the webhook is off", a)
					}
				}
				return
			}
			for _, a := range tc.args {
				if !slices.Contains(ctr.Args, a) {
					t.Errorf("args %v lack %s", ctr.Args, a)
				}
			}
			if i := slices.IndexFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "webhook" }); i < 0 || ctr.Ports[i].ContainerPort != tc.port {
				t.Errorf("container ports %v, want webhook %d", ctr.Ports, tc.port)
			}
			if !rendered {
				t.Fatal("no Service drover-webhook")
			}
			svc := into[corev1.Service](t, svcObj)
			if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) || len(svc.Spec.Ports) != 1 ||
				svc.Spec.Ports[0].Port != tc.port || svc.Spec.Ports[0].TargetPort.String() != "webhook" {
				t.Errorf("webhook Service %+v", svc.Spec)
			}
		})
	}
}

// TestDroverChartPrometheusRule: prometheusRule.enabled renders PrometheusRule drover with the
// rule groups of config/prometheus/drover-alerts.yaml as its spec, unchanged (no template
// evaluation of the alerts' own {{ $value }}), with extra labels; off by default. Without the
// ServiceMonitor nothing scrapes job drover-metrics and DroverDown would fire forever, so that
// is refused unless the user says their own scrape uses that job.
func TestDroverChartPrometheusRule(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../config/prometheus/drover-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vals map[string]any
		on   bool
	}{
		{"default off", nil, false},
		{"enabled", map[string]any{"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
			"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}, true},
		{"own scrape config", map[string]any{"prometheusRule": map[string]any{"enabled": true, "allowWithoutServiceMonitor": true,
			"labels": map[string]any{"release": "prometheus"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			objs := mustRender(t, load(t, "drover"), ns, tc.vals)
			key := "PrometheusRule/" + ns + "/drover"
			if _, ok := objs[key]; !tc.on {
				if ok {
					t.Fatalf("rendered %s", key)
				}
				return
			}
			rule := get(t, objs, key)
			if rule.GetAPIVersion() != "monitoring.coreos.com/v1" || rule.GetLabels()["release"] != "prometheus" {
				t.Errorf("apiVersion %s labels %v", rule.GetAPIVersion(), rule.GetLabels())
			}
			if got := rule.Object["spec"]; !reflect.DeepEqual(got, any(want)) {
				t.Errorf("spec differs from config/prometheus/drover-alerts.yaml (run make generate):\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// TestDroverChartUserRoles: drover-view and drover-edit are rendered from
// config/rbac/user_roles.yaml, aggregated into view/edit/admin by default; view covers every
// drover kind but BundleContents, so a kind added later is not silently out of users' reach.
func TestDroverChartUserRoles(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../config/rbac/user_roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rbacv1.ClusterRole{}
	for doc := range strings.SplitSeq(string(b), "\n---") {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		want[r.Name] = r
	}
	all, err := crds.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		readable := slices.ContainsFunc(want["drover-view"].Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, crd.Spec.Group) && slices.Contains(r.Resources, crd.Spec.Names.Plural) && slices.Contains(r.Verbs, "list")
		})
		if readable == (crd.Name == "bundlecontents.fleet.drover.io") {
			t.Errorf("drover-view may list %s: %t", crd.Name, readable)
		}
	}
	for _, tc := range []struct {
		name      string
		vals      map[string]any
		on, aggre bool
	}{
		{"default", nil, true, true},
		{"not aggregated", map[string]any{"userRoles": map[string]any{"aggregate": false}}, true, false},
		{"off", map[string]any{"userRoles": map[string]any{"enabled": false}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			objs := mustRender(t, load(t, "drover"), ns, tc.vals)
			for name, w := range want {
				key := "ClusterRole//" + name
				if _, ok := objs[key]; !tc.on {
					if ok {
						t.Errorf("rendered %s", key)
					}
					continue
				}
				got := into[rbacv1.ClusterRole](t, get(t, objs, key))
				if !reflect.DeepEqual(got.Rules, w.Rules) {
					t.Errorf("%s rules differ from config/rbac/user_roles.yaml (run make generate): %+v", name, got.Rules)
				}
				for k, v := range w.Labels {
					if (got.Labels[k] == v) != tc.aggre {
						t.Errorf("%s label %s=%q, aggregated: %t", name, k, got.Labels[k], tc.aggre)
					}
				}
				if got.Labels["app.kubernetes.io/name"] != "drover" {
					t.Errorf("%s lacks the chart's labels: %v", name, got.Labels)
				}
			}
		})
	}
}

// TestDroverChartPodDisruptionBudget: with two replicas the PDB keeps one running through node
// drains; with one it is not rendered, as minAvailable 1 of 1 would allow no eviction and block
// every drain.
func TestDroverChartPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		vals         map[string]any
		minAvailable int // 0: no PDB
	}{
		{"default two replicas", nil, 1},
		{"one replica", map[string]any{"replicas": 1}, 0},
		{"three replicas, two available", map[string]any{"replicas": 3, "podDisruptionBudget": map[string]any{"minAvailable": 2}}, 2},
		{"disabled", map[string]any{"podDisruptionBudget": map[string]any{"enabled": false}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			objs := mustRender(t, load(t, "drover"), ns, tc.vals)
			u, ok := objs["PodDisruptionBudget/"+ns+"/drover"]
			if tc.minAvailable == 0 {
				if ok {
					t.Fatalf("PDB rendered: %v", u.Object["spec"])
				}
				return
			}
			if !ok {
				t.Fatal("no PDB")
			}
			if pdb := into[policyv1.PodDisruptionBudget](t, u); pdb.Spec.MinAvailable.IntValue() != tc.minAvailable {
				t.Errorf("minAvailable %v, want %d", pdb.Spec.MinAvailable, tc.minAvailable)
			}
		})
	}
}

// TestDroverChartSingleReplica: leader election may be turned off for a single replica.
func TestDroverChartSingleReplica(t *testing.T) {
	t.Parallel()
	vals := map[string]any{"replicas": 1, "leaderElection": false}
	lint(t, "drover", ns, vals)
	_, ctr := serverContainer(t, mustRender(t, load(t, "drover"), ns, vals))
	if !slices.Contains(ctr.Args, "--leader-elect=false") {
		t.Errorf("args %v lack --leader-elect=false", ctr.Args)
	}
}

// TestDroverChartRefusedCombinations: values that would install a drover that fights itself,
// blocks node drains, cannot be upgraded or alerts forever are refused at install, naming the
// values to change.
func TestDroverChartRefusedCombinations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		vals map[string]any
		want []string
	}{
		{"two replicas without leader election", map[string]any{"leaderElection": false},
			[]string{"leaderElection=false", "replicas=2"}},
		{"minAvailable of every replica", map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"minAvailable": 2}},
			[]string{"podDisruptionBudget.minAvailable=2", "replicas=2"}},
		// A duplicate selector label renders, then fails the upgrade: "selector does not match template labels".
		{"podLabels overriding the selector's name", map[string]any{"podLabels": map[string]any{"app.kubernetes.io/name": "x"}},
			[]string{"podLabels.app.kubernetes.io/name"}},
		{"podLabels overriding the selector's instance", map[string]any{"podLabels": map[string]any{"team": "a", "app.kubernetes.io/instance": "x"}},
			[]string{"podLabels.app.kubernetes.io/instance"}},
		{"PrometheusRule without ServiceMonitor", map[string]any{"prometheusRule": map[string]any{"enabled": true}},
			[]string{"prometheusRule.enabled", "metrics.serviceMonitor.enabled=true", "prometheusRule.allowWithoutServiceMonitor=true", `job="drover-metrics"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := render(t, load(t, "drover"), ns, tc.vals)
			if err == nil {
				t.Fatalf("values %v rendered, want them refused", tc.vals)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestDroverChartPodLabels: extra pod labels sit beside the selector's, which stay as they are.
func TestDroverChartPodLabels(t *testing.T) {
	t.Parallel()
	vals := map[string]any{"podLabels": map[string]any{"team": "platform"}}
	lint(t, "drover", ns, vals)
	d, _ := serverContainer(t, mustRender(t, load(t, "drover"), ns, vals))
	want := map[string]string{"team": "platform"}
	for k, v := range d.Spec.Selector.MatchLabels {
		want[k] = v
	}
	if got := d.Spec.Template.Labels; !reflect.DeepEqual(got, want) {
		t.Errorf("pod labels %v, want %v", got, want)
	}
}

// TestDroverChartAffinity: a user's affinity (a nodeAffinity, say) is merged with the chart's
// podAntiAffinity, which it replaces only when it sets a podAntiAffinity of its own.
func TestDroverChartAffinity(t *testing.T) {
	t.Parallel()
	nodeAffinity := map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
			map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}}}}}}
	ownAnti := map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 10,
		"podAffinityTerm": map[string]any{"topologyKey": "topology.kubernetes.io/zone", "labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "drover"}}}}}}
	for _, tc := range []struct {
		name             string
		vals             map[string]any
		node             bool
		required, prefer string // topologyKey of the one anti-affinity term expected, "" for none
	}{
		{"default soft", nil, false, "", "kubernetes.io/hostname"},
		{"nodeAffinity keeps hard", map[string]any{"podAntiAffinity": "hard", "affinity": map[string]any{"nodeAffinity": nodeAffinity}},
			true, "kubernetes.io/hostname", ""},
		{"nodeAffinity keeps soft", map[string]any{"affinity": map[string]any{"nodeAffinity": nodeAffinity}},
			true, "", "kubernetes.io/hostname"},
		{"own podAntiAffinity wins", map[string]any{"podAntiAffinity": "hard", "affinity": map[string]any{"nodeAffinity": nodeAffinity, "podAntiAffinity": ownAnti}},
			true, "", "topology.kubernetes.io/zone"},
		{"no podAntiAffinity", map[string]any{"podAntiAffinity": "", "affinity": map[string]any{"nodeAffinity": nodeAffinity}},
			true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lint(t, "drover", ns, tc.vals)
			d, _ := serverContainer(t, mustRender(t, load(t, "drover"), ns, tc.vals))
			a := d.Spec.Template.Spec.Affinity
			if a == nil {
				t.Fatal("no affinity")
			}
			if (a.NodeAffinity != nil) != tc.node {
				t.Errorf("nodeAffinity %+v, want it: %t", a.NodeAffinity, tc.node)
			}
			var required, prefer []string
			if pa := a.PodAntiAffinity; pa != nil {
				for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
					required = append(required, term.TopologyKey)
					if !reflect.DeepEqual(term.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
						t.Errorf("required term selects %v", term.LabelSelector.MatchLabels)
					}
				}
				for _, term := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
					prefer = append(prefer, term.PodAffinityTerm.TopologyKey)
				}
			}
			if want := nonEmpty(tc.required); !reflect.DeepEqual(required, want) {
				t.Errorf("required anti-affinity %v, want %v", required, want)
			}
			if want := nonEmpty(tc.prefer); !reflect.DeepEqual(prefer, want) {
				t.Errorf("preferred anti-affinity %v, want %v", prefer, want)
			}
		})
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// TestDroverChartNotes: what `helm install` prints: how to check drover runs, how to reach the
// dashboard when it is on, and warnings for an unset image or apiServerURL.
func TestDroverChartNotes(t *testing.T) {
	t.Parallel()
	const (
		check       = "drover check"
		noURL       = "WARNING: apiServerURL is empty"
		devImage    = "WARNING: image is not set"
		forward     = "port-forward svc/drover-dashboard"
		plain       = "plain HTTP"
		workstation = "`drover dashboard` on your machine"
	)
	set := map[string]any{"image": "registry.example.com/drover:v1", "apiServerURL": "https://mgmt.example.com:6443"}
	with := func(extra map[string]any) map[string]any {
		out := maps.Clone(set)
		maps.Copy(out, extra)
		return out
	}
	for _, tc := range []struct {
		name      string
		vals      map[string]any
		want, not []string
	}{
		{"defaults", nil, []string{check, noURL, devImage, workstation}, []string{forward}},
		{"configured", set, []string{check, workstation}, []string{noURL, devImage, forward}},
		{"dashboard over HTTP", with(map[string]any{"dashboard": map[string]any{"enabled": true}}),
			[]string{forward + " 8082", "http://127.0.0.1:8082", plain}, []string{noURL, workstation}},
		{"dashboard over HTTPS", with(map[string]any{"dashboard": map[string]any{"enabled": true, "port": 9443, "tls": map[string]any{"secretName": "ui-cert"}}}),
			[]string{forward + " 9443", "https://127.0.0.1:9443"}, []string{plain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files, err := renderFiles(load(t, "drover"), ns, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			notes, ok := files["drover/templates/NOTES.txt"]
			if !ok {
				t.Fatal("no NOTES.txt")
			}
			for _, w := range tc.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(notes, n) {
					t.Errorf("NOTES have %q:\n%s", n, notes)
				}
			}
		})
	}
}
