// Package helmchart handles the Helm charts of Bundles: it packages a chart directory read from
// Git into a reproducible .tgz (the same files give the same bytes, so an unchanged chart never
// looks changed), downloads a chart from an HTTP(S) Helm repository, checks that a chart renders
// (as `helm template` does, without a cluster) naming the template file that fails, and hides
// values from messages. The agent installs the archive with Helm's Go SDK (internal/agent/deployer).
package helmchart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
	"helm.sh/helm/v4/pkg/release"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// MaxArchiveSize bounds a chart archive (a Bundle must fit in one API object).
const MaxArchiveSize = 1 << 20

// maxReleaseName is Helm's limit on release names.
const maxReleaseName = 53

// Package writes the chart made of files (slash paths relative to the chart's directory) as a
// gzipped tar, as `helm package` lays it out ("<name>/Chart.yaml", ...), leaving out what the
// chart's .helmignore names. Entries are sorted and carry no time stamps, so the same files
// always give the same archive. It checks that Helm can load the result.
func Package(files map[string][]byte) ([]byte, error) {
	meta, ok := files["Chart.yaml"]
	if !ok {
		return nil, errors.New("no Chart.yaml")
	}
	var md struct {
		Name string `json:"name"`
	}
	if err := yaml.Unmarshal(meta, &md); err != nil {
		return nil, fmt.Errorf("read Chart.yaml: %w", err)
	}
	if md.Name == "" || strings.ContainsAny(md.Name, "/\\") {
		return nil, fmt.Errorf("the name %q in Chart.yaml is not a chart name", md.Name)
	}
	rules := ignore.Empty()
	if hi, ok := files[ignore.HelmIgnore]; ok {
		var err error
		if rules, err = ignore.Parse(bytes.NewReader(hi)); err != nil {
			return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	names := make([]string, 0, len(files))
	for n := range files {
		if !ignored(rules, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf) // no name, no ModTime in the header
	tw := tar.NewWriter(gz)
	for _, n := range names {
		data := files[n]
		hdr := &tar.Header{Name: md.Name + "/" + n, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0).UTC(), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("package %s: %w", n, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("package %s: %w", n, err)
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		return nil, fmt.Errorf("package chart: %w", err)
	}
	if buf.Len() > MaxArchiveSize {
		return nil, fmt.Errorf("the packaged chart is %d bytes, more than %d: leave files out with .helmignore", buf.Len(), MaxArchiveSize)
	}
	if _, err := Load(buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ignored applies .helmignore rules to a file and its parent directories.
func ignored(r *ignore.Rules, name string) bool {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if r.Ignore(strings.Join(parts[:i], "/"), fileInfo{name: parts[i-1], dir: true}) {
			return true
		}
	}
	return r.Ignore(name, fileInfo{name: parts[len(parts)-1]})
}

// fileInfo is the os.FileInfo .helmignore rules look at (name and whether a directory).
type fileInfo struct {
	name string
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return 0 }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }

// Load reads a chart archive.
func Load(archive []byte) (*chart.Chart, error) {
	c, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return c, nil
}

// templateFile finds the chart file a Helm error is about: "<chart>/templates/x.yaml" (also of
// a subchart, "<chart>/charts/<sub>/templates/...").
var templateFile = regexp.MustCompile(`[A-Za-z0-9_.-]+/(?:charts/[A-Za-z0-9_.-]+/)*templates/[^\s:"]+`)

// RenderError is a chart that does not render; File is the chart file named by Helm's error
// (slash path relative to the chart directory, e.g. "templates/cm.yaml"), or "" if none.
type RenderError struct {
	File string
	Err  error
}

func (e *RenderError) Error() string { return e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }

// Render renders the chart as release name in namespace with values, as `helm template` does
// (no cluster: default capabilities), and returns the manifest. A failure is a *RenderError.
func Render(ctx context.Context, archive []byte, values map[string]any, name, namespace string) (string, error) {
	c, err := Load(archive)
	if err != nil {
		return "", &RenderError{File: "Chart.yaml", Err: err}
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	install := action.NewInstall(cfg)
	install.DryRunStrategy, install.ReleaseName, install.Namespace, install.Replace = action.DryRunClient, name, namespace, true
	rel, err := install.RunWithContext(ctx, c, values)
	if err != nil {
		file := ""
		if m := templateFile.FindString(err.Error()); m != "" {
			_, file, _ = strings.Cut(m, "/")
		}
		return "", &RenderError{File: file, Err: err}
	}
	if rel == nil {
		return "", &RenderError{Err: errors.New("rendering gave no release")}
	}
	// The manifest is in the release; Accessor avoids depending on its concrete type.
	return manifestOf(rel)
}

func manifestOf(rel release.Releaser) (string, error) {
	a, err := release.NewAccessor(rel)
	if err != nil {
		return "", fmt.Errorf("read rendered release: %w", err)
	}
	return a.Manifest(), nil
}

// ReleaseName is the default release name of Bundle bundle: its name, or when longer than Helm's
// 53 characters, cut and ending in a hash of the whole name (stable and unique).
func ReleaseName(bundle string) string {
	if len(bundle) <= maxReleaseName {
		return bundle
	}
	h := sha256.Sum256([]byte(bundle))
	return strings.TrimRight(bundle[:maxReleaseName-9], "-") + "-" + hex.EncodeToString(h[:])[:8]
}

// ValidReleaseName checks a release name as the Bundle API does.
func ValidReleaseName(n string) error {
	if len(n) > maxReleaseName {
		return fmt.Errorf("%q is longer than %d characters", n, maxReleaseName)
	}
	if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
		return fmt.Errorf("%q: %s", n, strings.Join(errs, "; "))
	}
	return nil
}

// FromRepo downloads chart name from the HTTP(S) Helm repository at repoURL: the version
// matching version (an exact version or a semver constraint; empty: the latest stable one) in
// its index.yaml, checked against the index's digest. It returns the archive and its version.
func FromRepo(ctx context.Context, hc *http.Client, repoURL, name, version string, creds *Credentials) ([]byte, string, error) {
	base := strings.TrimSuffix(repoURL, "/")
	data, err := get(ctx, hc, base+"/index.yaml", 20<<20, creds)
	if err != nil {
		return nil, "", err
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return nil, "", fmt.Errorf("%s/index.yaml is not a Helm repository index: %w", base, err)
	}
	idx.SortEntries()
	cv, err := idx.Get(name, version)
	if err != nil {
		want := "any version"
		if version != "" {
			want = "version " + version
		}
		return nil, "", fmt.Errorf("chart %s (%s) not found in %s: %w", name, want, base, err)
	}
	if len(cv.URLs) == 0 {
		return nil, "", fmt.Errorf("chart %s %s in %s has no URL", name, cv.Version, base)
	}
	u, err := repo.ResolveReferenceURL(base+"/", cv.URLs[0])
	if err != nil {
		return nil, "", fmt.Errorf("chart %s %s: URL %q: %w", name, cv.Version, cv.URLs[0], err)
	}
	// Credentials go to the chart's URL only when it is on the repository's host (an index may
	// point anywhere), as Helm's pass-credentials default.
	var chartCreds *Credentials
	if sameHost(u, base) {
		chartCreds = creds
	}
	archive, err := get(ctx, hc, u, MaxArchiveSize, chartCreds)
	if err != nil {
		return nil, "", err
	}
	if cv.Digest != "" {
		sum := sha256.Sum256(archive)
		if hex.EncodeToString(sum[:]) != strings.TrimPrefix(cv.Digest, "sha256:") {
			return nil, "", fmt.Errorf("chart %s %s from %s does not match the digest in the repository's index", name, cv.Version, u)
		}
	}
	if _, err := Load(archive); err != nil {
		return nil, "", fmt.Errorf("chart %s %s from %s: %w", name, cv.Version, u, err)
	}
	return archive, cv.Version, nil
}

func get(ctx context.Context, hc *http.Client, url string, limit int64, creds *Credentials) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if creds != nil {
		req.SetBasicAuth(creds.Username, creds.Password)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		if creds == nil {
			return nil, fmt.Errorf("GET %s: %s: the repository needs credentials", url, resp.Status)
		}
		return nil, fmt.Errorf("GET %s: %s: the repository refused the credentials", url, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: more than %d bytes", url, limit)
	}
	return data, nil
}

// Redact replaces in msg every value of values found under a key sensitive reports true for
// (and below it), so a Helm error quoting a password never reaches a status or a log.
// Values shorter than 3 characters are left: replacing them would garble the message and
// reveals next to nothing.
func Redact(msg string, values map[string]any, sensitive func(string) bool) string {
	var secrets []string
	var walk func(v any, hidden bool)
	walk = func(v any, hidden bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				walk(c, hidden || sensitive(k))
			}
		case []any:
			for _, c := range t {
				walk(c, hidden)
			}
		default:
			if s := fmt.Sprint(t); hidden && t != nil && len(s) >= 3 {
				secrets = append(secrets, s)
			}
		}
	}
	walk(values, false)
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "(redacted)")
	}
	return msg
}

// sameHost reports whether URLs a and b name the same scheme, host and port.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// MergeValues merges src over dst, maps key by key (as helm -f a.yaml -f b.yaml does), and
// returns dst.
func MergeValues(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = MergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}
