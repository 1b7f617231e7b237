package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/version"
)

func runVersion(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append([]string{"version"}, args...))
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
