package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/version"
)

func runVersion(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	// --client: these tests must not depend on a kubeconfig lying around (TestVersionServer).
	cmd.SetArgs(append([]string{"version", "--client"}, args...))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// TestVersionCommand: text and JSON carry the same build identity, and the Kubernetes version
// drover's clients were built with is the one its embedded control plane runs.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	text, err := runVersion(t)
	if err != nil {
		t.Fatal(err)
	}
	js, err := runVersion(t, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var info version.Info
	if err := json.Unmarshal([]byte(js), &info); err != nil {
		t.Fatalf("-o json: %v\n%s", err, js)
	}
	if info != buildInfo() {
		t.Errorf("-o json %+v, want %+v", info, buildInfo())
	}
	if info.KubernetesVersion != controlplane.KubernetesVersion {
		t.Errorf("built against Kubernetes %s, the embedded control plane runs %s", info.KubernetesVersion, controlplane.KubernetesVersion)
	}
	for _, want := range []string{"drover " + info.Version + "\n", info.GitCommit, info.GoVersion, info.KubernetesVersion} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if y, err := runVersion(t, "-o", "yaml"); err != nil || !strings.Contains(y, "gitCommit: "+info.GitCommit) {
		t.Errorf("-o yaml: %v\n%s", err, y)
	}
	if _, err := runVersion(t, "-o", "xml"); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "unknown output format") {
		t.Errorf("-o xml: %v, want a usage error", err)
	}
}

// TestVersionGolden: `drover version` in each of its output formats (text, json, yaml), with
// the build's values replaced by placeholders.
func TestVersionGolden(t *testing.T) {
	t.Parallel()
	info := buildInfo()
	placeholders := strings.NewReplacer(info.Version, "VERSION", info.GitCommit, "COMMIT", info.GoVersion, "GO",
		info.Platform, "PLATFORM", info.KubernetesVersion, "KUBERNETES")
	for _, f := range []string{"", "json", "yaml"} {
		name, args := "version", []string{}
		if f != "" {
			name, args = name+"-"+f, []string{"-o", f}
		}
		out, err := runVersion(t, args...)
		if err != nil {
			t.Fatalf("version %v: %v", args, err)
		}
		golden(t, name, placeholders.Replace(out))
	}
}

// TestVersionServer: as kubectl, drover version also reports the management cluster's versions:
// the drover that last applied its CRDs (their fleet.drover.io/version annotation) and
// Kubernetes; without a kubeconfig only this binary's; an unreachable cluster is exit 1 after
// this binary's version.
func TestVersionServer(t *testing.T) {
	isolateKube(t)
	ctx := t.Context()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Name: "clusters.fleet.drover.io"}, crd); err != nil {
		t.Fatal(err)
	}
	before := crd.DeepCopy()
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[crds.VersionAnnotation] = "v9.8.7"
	if err := mgmt.Client.Patch(ctx, crd, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	out, _, err := drover(ctx, "version", "--kubeconfig", mgmtKubeconfig(t))
	if err != nil || !strings.Contains(out, "drover "+buildInfo().Version+"\n") || !strings.Contains(out, "server "+mgmt.Config.Host+"\n  drover:      v9.8.7\n  kubernetes:  v") {
		t.Errorf("drover version with a management cluster: %v\n%s", err, out)
	}
	js, _, err := drover(ctx, "version", "--kubeconfig", mgmtKubeconfig(t), "-o", "json")
	var v struct {
		Version string `json:"version"`
		Server  struct{ Drover, Kubernetes string }
	}
	if err != nil || json.Unmarshal([]byte(js), &v) != nil || v.Version != buildInfo().Version || v.Server.Drover != "v9.8.7" || v.Server.Kubernetes == "" {
		t.Errorf("drover version -o json: %v %+v\n%s", err, v, js)
	}
	if out, _, err := drover(ctx, "version"); err != nil || strings.Contains(out, "server") {
		t.Errorf("drover version without a kubeconfig: %v\n%s", err, out)
	}
	gone := writeKubeconfig(t, filepath.Join(t.TempDir(), "kc"), "gone")
	out, _, err = drover(ctx, "version", "--kubeconfig", gone, "--request-timeout", "2s")
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(out, "drover "+buildInfo().Version) {
		t.Errorf("drover version with an unreachable cluster: %v\n%s", err, out)
	}
}
