package version

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	t.Parallel()
	deps := []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.2"}, {Path: "k8s.io/client-go", Version: "v0.37.2"}}
	for _, tc := range []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		{"dev build", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Deps: deps,
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: Dev, GitCommit: "abc123-dirty", KubernetesVersion: "v1.37.2"}},
		{"ldflags win", "v1.2.3", "def456", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Deps: deps,
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}}},
			Info{Version: "v1.2.3", GitCommit: "def456", KubernetesVersion: "v1.37.2"}},
		{"go install @version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"},
			Deps: []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.36.0", Replace: &debug.Module{Version: "v0.37.1"}}}},
			Info{Version: "v1.4.0", GitCommit: "unknown", KubernetesVersion: "v1.37.1"}},
		{"pseudo-version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-abcdef123456"}},
			Info{Version: Dev, GitCommit: "unknown", KubernetesVersion: "unknown"}},
		{"no build info", "", "", nil, Info{Version: Dev, GitCommit: "unknown", KubernetesVersion: "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(tc.bi, tc.version, tc.commit)
			tc.want.GoVersion, tc.want.Platform = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRunningBinary: the default image is the version's, never :latest (the Kubernetes version
// is checked in internal/cli, whose binary links client-go).
func TestRunningBinary(t *testing.T) {
	t.Parallel()
	info := Get()
	if want := ImageRepository + ":" + info.Version; Image() != want || strings.HasSuffix(Image(), ":latest") {
		t.Errorf("image %q, want %q", Image(), want)
	}
	var back Info
	b, err := info.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || back != info {
		t.Errorf("JSON round trip: %s %v", b, err)
	}
	for _, want := range []string{"drover " + info.Version, info.GitCommit, info.GoVersion, info.KubernetesVersion} {
		if !strings.Contains(info.String(), want) {
			t.Errorf("%q lacks %q", info.String(), want)
		}
	}
}

func TestTag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"v1.2.3":                 "v1.2.3",
		"v1.2.3-rc.1+build.5":    "v1.2.3-rc.1-build.5",
		"v0.1.0-3-gabc-dirty":    "v0.1.0-3-gabc-dirty",
		".x":                     "_x",
		"":                       "unknown",
		strings.Repeat("a", 200): strings.Repeat("a", 128),
	} {
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
	}
}
