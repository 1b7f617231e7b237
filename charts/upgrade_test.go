package charts

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// TestDroverChartUpgradeAcrossVersions: docs/install.md's upgrade. From a chart version that
// lacked a value this one has (here: an older chart without dashboard.*), `helm upgrade
// --reuse-values` renders with the old release's values only and fails on the missing map;
// `--reset-then-reuse-values` takes this chart's defaults and keeps the user's own values.
// Helm's release storage and a printing kube client stand in for a cluster: only values and
// rendering are at stake.
func TestDroverChartUpgradeAcrossVersions(t *testing.T) {
	t.Parallel()
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	cfg.Releases = storage.Init(driver.NewMemory())
	cfg.KubeClient = &kubefake.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}
	cfg.Capabilities = common.DefaultCapabilities

	old := load(t, "drover")
	old.Metadata.Version = "0.0.1"
	delete(old.Values, "dashboard")
	for _, f := range old.Templates {
		f.Data = []byte(strings.ReplaceAll(string(f.Data), ".Values.dashboard.enabled", "false"))
	}
	const url = "https://mgmt.example.com:6443"
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "drover", ns
	if _, err := install.RunWithContext(t.Context(), old, map[string]any{"apiServerURL": url, "replicas": 3}); err != nil {
		t.Fatalf("install the older chart: %v", err)
	}

	upgrade := func(reuse, resetThenReuse bool) (*releasev1.Release, error) {
		u := action.NewUpgrade(cfg)
		u.Namespace, u.ReuseValues, u.ResetThenReuseValues = ns, reuse, resetThenReuse
		r, err := u.RunWithContext(t.Context(), "drover", load(t, "drover"), nil)
		if err != nil {
			return nil, err
		}
		return r.(*releasev1.Release), nil
	}
	_, err := upgrade(true, false)
	if err == nil || !strings.Contains(err.Error(), "nil pointer") {
		t.Errorf("upgrade --reuse-values: %v, want a nil pointer at the missing dashboard map", err)
	}
	t.Logf("upgrade --reuse-values: %q", err)
	r, err := upgrade(false, true)
	if err != nil {
		t.Fatalf("upgrade --reset-then-reuse-values: %v", err)
	}
	if !strings.Contains(r.Manifest, "replicas: 3") || !strings.Contains(r.Manifest, `apiServerURL: "`+url+`"`) {
		t.Errorf("the user's values are lost:\n%s", r.Manifest)
	}
	if strings.Contains(r.Manifest, "drover-dashboard") {
		t.Error("the dashboard is served, but this chart's default is off")
	}
}
