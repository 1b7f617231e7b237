// Command image builds drover's container image offline and reproducibly: one layer holding the
// static drover binary and a passwd/group entry for a non-root user, on an empty base, written as
// a docker-archive tarball (`docker load -i`, `crane push`, `kind load image-archive`). No
// registry is contacted and no base image is pulled, so it runs where only the Go module proxy is
// reachable. Every timestamp is fixed (SOURCE_DATE_EPOCH, else 1970), so the same binary always
// gives the same image digest.
//
// `make image` builds the binary (CGO_ENABLED=0, -trimpath, version ldflags) and runs this.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/droverhq/drover/internal/version"
)

// The image's user: distroless' "nonroot", so volumes and policies written for it apply.
const (
	UID  = 65532
	User = "65532:65532"
)

// Options describe an image build.
type Options struct {
	// Binary is the static drover binary for linux/Arch.
	Binary string
	// Repository and Tag name the image (Tag is sanitised into a valid tag).
	Repository, Tag string
	// Commit is recorded as the org.opencontainers.image.revision label.
	Commit string
	// Arch is the binary's GOARCH.
	Arch string
	// Created is every timestamp in the image.
	Created time.Time
}

// Ref is the image's name.
func (o Options) Ref() (name.Tag, error) {
	return name.NewTag(o.Repository+":"+version.Tag(o.Tag), name.StrictValidation)
}

func main() {
	o := Options{Repository: version.ImageRepository, Arch: runtime.GOARCH}
	var output string
	flag.StringVar(&o.Binary, "binary", "", "static linux drover binary to put in the image (required)")
	flag.StringVar(&o.Tag, "tag", version.Dev, "image tag: the drover version")
	flag.StringVar(&o.Repository, "repository", o.Repository, "image repository")
	flag.StringVar(&o.Commit, "commit", "", "git commit, recorded as a label")
	flag.StringVar(&o.Arch, "arch", o.Arch, "GOARCH of the binary")
	flag.StringVar(&output, "output", filepath.Join("bin", "drover-image.tar"), "tarball to write")
	flag.Parse()
	created, err := sourceDateEpoch()
	if err == nil {
		o.Created = created
		err = Write(o, output)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (reproducible-builds.org), else the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

// Write builds the image and writes it to output (atomically), printing its name and digest.
func Write(o Options, output string) error {
	ref, err := o.Ref()
	if err != nil {
		return fmt.Errorf("image name: %w", err)
	}
	img, err := Build(o)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(output), 0o750); err != nil {
		return err
	}
	tmp := output + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", output, err)
	}
	if err := os.Rename(tmp, output); err != nil {
		return err
	}
	fmt.Printf("%s %s@%s\n", output, ref, digest)
	return nil
}

// Build assembles the image.
func Build(o Options) (v1.Image, error) {
	if o.Binary == "" {
		return nil, errors.New("--binary is required: build drover with CGO_ENABLED=0 GOOS=linux (make image does)")
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("read drover binary: %w", err)
	}
	layerTar, err := rootfs(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: o.Created}, CreatedBy: "hack/image: /drover, /etc/passwd, /etc/group, /tmp", Comment: "drover " + o.Tag,
	}})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", o.Arch, v1.Time{Time: o.Created}
	cf.Config.Entrypoint = []string{"/drover"}
	cf.Config.Cmd = nil
	cf.Config.User = User
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"HOME=/home/nonroot"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "drover",
		"org.opencontainers.image.source":   "https://github.com/droverhq/drover",
		"org.opencontainers.image.version":  o.Tag,
		"org.opencontainers.image.revision": o.Commit,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

// rootfs is the layer: entries in a fixed order with fixed owners and times.
func rootfs(bin []byte, created time.Time) ([]byte, error) {
	type entry struct {
		name  string
		mode  int64
		uid   int
		data  []byte
		isDir bool
	}
	entries := []entry{
		{name: "drover", mode: 0o755, data: bin},
		{name: "etc/", mode: 0o755, isDir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "home/", mode: 0o755, isDir: true},
		{name: "home/nonroot/", mode: 0o700, uid: UID, isDir: true},
		{name: "tmp/", mode: 0o1777, isDir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.isDir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
