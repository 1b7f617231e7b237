package manifests

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDeploymentProbes: the agent's Deployment declares its metrics and health ports and probes
// /healthz (liveness) and /readyz (readiness) on the health port.
func TestDeploymentProbes(t *testing.T) {
	t.Parallel()
	objs, err := Objects(Options{Namespace: "drover-agent", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			t.Fatal(err)
		}
		c := d.Spec.Template.Spec.Containers[0]
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["metrics"] != MetricsPort || ports["health"] != HealthPort {
			t.Errorf("ports %v, want metrics %d and health %d", ports, MetricsPort, HealthPort)
		}
		for probe, path := range map[string]string{"liveness": "/healthz", "readiness": "/readyz"} {
			p := c.LivenessProbe
			if probe == "readiness" {
				p = c.ReadinessProbe
			}
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.StrVal != "health" {
				t.Errorf("%s probe %+v, want GET %s on the health port", probe, p, path)
			}
		}
		return
	}
	t.Fatal("no Deployment")
}
