package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/droverhq/drover/internal/version"
)

// TestImage builds drover as `make image` does, builds the image twice and inspects the
// tarball: same digest, entrypoint /drover, a non-root user, and the binary inside reports the
// version it was built with.
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image holds a linux binary that this test runs")
	}
	dir := t.TempDir()
	const ver, commit = "v1.2.3-imagetest", "0123456789abcdef"
	bin := filepath.Join(dir, "drover")
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags",
		"-X github.com/droverhq/drover/internal/version.Version="+ver+" -X github.com/droverhq/drover/internal/version.Commit="+commit,
		"-o", bin, "./cmd/drover")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build drover: %v\n%s", err, out)
	}
	o := Options{Binary: bin, Repository: version.ImageRepository, Tag: ver, Commit: commit, Arch: runtime.GOARCH, Created: time.Unix(0, 0).UTC()}
	first, second := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, out := range []string{first, second} {
		if err := Write(o, out); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if string(a) != string(b) {
		t.Error("two builds from the same binary differ")
	}

	ref, err := o.Ref()
	if err != nil {
		t.Fatal(err)
	}
	if ref.String() != version.ImageRepository+":"+ver {
		t.Errorf("tag %s", ref)
	}
	img, err := tarball.ImageFromPath(first, &ref)
	if err != nil {
		t.Fatalf("load the tarball as %s: %v", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/drover" {
		t.Errorf("entrypoint %v, want [/drover]", cf.Config.Entrypoint)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root)", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("platform %s/%s created %s", cf.OS, cf.Architecture, cf.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	extracted := filepath.Join(dir, "extracted-drover")
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == "drover" {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h := files["drover"]; h == nil || h.Mode != 0o755 || h.Uid != 0 {
		t.Fatalf("layer has no root-owned executable /drover: %+v", h)
	}
	if files["etc/passwd"] == nil || files["tmp/"] == nil {
		t.Errorf("layer lacks /etc/passwd or /tmp: %v", files)
	}
	out, err := exec.CommandContext(t.Context(), extracted, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("drover version from the image: %v", err)
	}
	var info version.Info
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if info.Version != ver || info.GitCommit != commit {
		t.Errorf("image's drover says %s %s, built as %s %s", info.Version, info.GitCommit, ver, commit)
	}
	// A real binary carries its module list: the Kubernetes version comes from client-go.
	if info.KubernetesVersion == version.Unknown || info.KubernetesVersion == "" {
		t.Errorf("kubernetes version %q", info.KubernetesVersion)
	}
}
