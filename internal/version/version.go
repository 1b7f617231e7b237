// Package version is drover's build identity: its version, git commit, Go version and the
// Kubernetes version its clients were built against, and the image agents run by default.
//
// Release builds set Version and Commit with -ldflags "-X" (make build, make image); a plain
// `go build` falls back to the module and VCS information Go embeds in every binary.
package version

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set with -ldflags "-X github.com/droverhq/drover/internal/version.Version=v1.2.3".
var (
	Version string
	Commit  string
)

const (
	// Dev is the version of a build from a source tree without a version set.
	Dev = "v0.0.0-dev"
	// Unknown stands for what the binary does not record.
	Unknown = "unknown"
	// ImageRepository is where drover's image is published; agents run <repository>:<version>.
	ImageRepository = "ghcr.io/droverhq/drover"
	clientGo        = "k8s.io/client-go"
)

// Info describes a build.
type Info struct {
	Version           string `json:"version"`
	GitCommit         string `json:"gitCommit"`
	GoVersion         string `json:"goVersion"`
	KubernetesVersion string `json:"kubernetesVersion"`
	Platform          string `json:"platform"`
}

// Get describes the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(bi, Version, Commit)
}

func get(bi *debug.BuildInfo, version, commit string) Info {
	info := Info{Version: version, GitCommit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		bi = &debug.BuildInfo{}
	}
	if info.Version == "" {
		// `go install github.com/droverhq/drover/cmd/drover@v1.2.3` records the module version.
		if v := bi.Main.Version; v != "" && v != "(devel)" && !strings.HasPrefix(v, "v0.0.0-") {
			info.Version = v
		} else {
			info.Version = Dev
		}
	}
	if info.GitCommit == "" {
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		info.GitCommit = settings["vcs.revision"]
		if info.GitCommit != "" && settings["vcs.modified"] == "true" {
			info.GitCommit += "-dirty"
		}
	}
	if info.GitCommit == "" {
		info.GitCommit = Unknown
	}
	for _, d := range bi.Deps {
		if d.Path == clientGo {
			if d.Replace != nil {
				d = d.Replace
			}
			info.KubernetesVersion = kubernetesOf(d.Version)
		}
	}
	if info.KubernetesVersion == "" {
		info.KubernetesVersion = Unknown
	}
	return info
}

// kubernetesOf maps a client-go version (v0.37.2) to its Kubernetes release (v1.37.2).
func kubernetesOf(clientGoVersion string) string {
	if rest, ok := strings.CutPrefix(clientGoVersion, "v0."); ok {
		return "v1." + rest
	}
	return clientGoVersion
}

// String is the form printed by `drover version`.
func (i Info) String() string {
	return "drover " + i.Version + "\n" +
		"  git commit:  " + i.GitCommit + "\n" +
		"  go:          " + i.GoVersion + " " + i.Platform + "\n" +
		"  kubernetes:  " + i.KubernetesVersion + "\n"
}

// JSON is the machine-readable form.
func (i Info) JSON() ([]byte, error) { return json.MarshalIndent(i, "", "  ") }

// Image is the image of this version: ImageRepository:<tag>, the default of every agent.
func Image() string { return ImageRepository + ":" + Tag(Get().Version) }

// Tag turns a version into a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}): a '+' of
// semver build metadata and anything else outside the set becomes '-'.
func Tag(v string) string {
	b := []byte(v)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || (i > 0 && (c == '.' || c == '-'))
		if !ok {
			b[i] = '_'
			if i > 0 {
				b[i] = '-'
			}
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	if len(b) == 0 {
		return Unknown
	}
	return string(b)
}
