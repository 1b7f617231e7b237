package helmchart

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// testChart is a small chart: a ConfigMap whose value comes from values.color.
func testChart(version string) map[string][]byte {
	return map[string][]byte{
		"Chart.yaml":             []byte("apiVersion: v2\nname: web\nversion: " + version + "\n"),
		"values.yaml":            []byte("color: blue\n"),
		"templates/_helpers.tpl": []byte(`{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}` + "\n"),
		"templates/cm.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"web.name\" . }}\ndata:\n  color: {{ .Values.color | quote }}\n"),
		"templates/NOTES.txt":    []byte("installed {{ .Release.Name }}\n"),
		"ci/test-values.yaml":    []byte("color: red\n"),
		".helmignore":            []byte("ci/\n"),
	}
}

func TestPackage(t *testing.T) {
	t.Parallel()
	a, err := Package(testChart("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Package(testChart("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same files packaged twice differ")
	}
	c, err := Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "web" || len(c.Templates) != 3 {
		t.Errorf("chart %s with %d templates, want web with 3", c.Name(), len(c.Templates))
	}
	for _, f := range c.Raw {
		if strings.HasPrefix(f.Name, "ci/") {
			t.Errorf("%s packaged although .helmignore names ci/", f.Name)
		}
	}
	if _, err := Package(map[string][]byte{"values.yaml": nil}); err == nil {
		t.Error("a chart without Chart.yaml packaged")
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	good, err := Package(testChart("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	broken := testChart("0.1.0")
	broken["templates/broken.yaml"] = []byte("{{ .Values.nope.deeper }}\n")
	brokenArchive, err := Package(broken)
	if err != nil {
		t.Fatal(err)
	}
	failing := testChart("0.1.0")
	failing["templates/check.yaml"] = []byte(`{{ if ne .Values.db.password "ok" }}{{ fail (printf "wrong password %s" .Values.db.password) }}{{ end }}` + "\n")
	failingArchive, err := Package(failing)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		values  map[string]any
		want    string // in the manifest
		file    string // of the RenderError
	}{
		{"values override", good, map[string]any{"color": "green"}, `color: "green"`, ""},
		{"defaults", good, nil, `color: "blue"`, ""},
		{"nil pointer in a template", brokenArchive, nil, "", "templates/broken.yaml"},
		{"fail", failingArchive, map[string]any{"db": map[string]any{"password": "hunter2-secret"}}, "", "templates/check.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := Render(ctx, tc.archive, tc.values, "rel", "ns")
			if tc.file == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(m, tc.want) || !strings.Contains(m, "name: rel-web") {
					t.Errorf("manifest %q lacks %q", m, tc.want)
				}
				return
			}
			var re *RenderError
			if !errors.As(err, &re) || re.File != tc.file {
				t.Fatalf("error %v (file %q), want a RenderError naming %s", err, fileOf(re), tc.file)
			}
		})
	}
}

func fileOf(re *RenderError) string {
	if re == nil {
		return ""
	}
	return re.File
}

func TestRedact(t *testing.T) {
	t.Parallel()
	vals := map[string]any{"db": map[string]any{"password": "hunter2-secret", "host": "db.example.com"},
		"apiToken": "tok-123456", "tls": map[string]any{"privateKey": []any{"line-one-secret"}}, "color": "blue"}
	sensitive := func(k string) bool {
		k = strings.ToLower(k)
		return strings.Contains(k, "password") || strings.Contains(k, "token") || strings.Contains(k, "key")
	}
	msg := "template: fail: wrong password hunter2-secret for db.example.com, token tok-123456, key line-one-secret, color blue"
	got := Redact(msg, vals, sensitive)
	for _, s := range []string{"hunter2-secret", "tok-123456", "line-one-secret"} {
		if strings.Contains(got, s) {
			t.Errorf("%q still in %q", s, got)
		}
	}
	for _, s := range []string{"db.example.com", "color blue"} {
		if !strings.Contains(got, s) {
			t.Errorf("%q (not sensitive) hidden: %q", s, got)
		}
	}
}

func TestFromRepo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	charts := map[string][]byte{}
	idx := repo.NewIndexFile()
	for _, v := range []string{"0.1.0", "0.2.0", "1.0.0-rc.1"} {
		a, err := Package(testChart(v))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(a)
		charts["/charts/web-"+v+".tgz"] = a
		if err := idx.MustAdd(&chart.Metadata{APIVersion: "v2", Name: "web", Version: v}, "charts/web-"+v+".tgz", "", hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
	}
	index, err := yaml.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := strings.CutPrefix(r.URL.Path, "/private"); ok {
			if u, pw, ok := r.BasicAuth(); !ok || u != "reader" || pw != "repo-password" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			r.URL.Path = p
		}
		if r.URL.Path == "/index.yaml" {
			_, _ = w.Write(index)
			return
		}
		if a, ok := charts[r.URL.Path]; ok {
			_, _ = w.Write(a)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	creds := &Credentials{Username: "reader", Password: "repo-password"}
	for _, tc := range []struct {
		name, repo, chart, version, want, err string
		creds                                 *Credentials
	}{
		{"latest stable", "/", "web", "", "0.2.0", "", nil},
		{"exact", "/", "web", "0.1.0", "0.1.0", "", nil},
		{"constraint", "/", "web", "~0.1", "0.1.0", "", nil},
		{"unknown chart", "/", "api", "", "", "chart api (any version) not found", nil},
		{"unknown version", "/", "web", "9.9.9", "", "chart web (version 9.9.9) not found", nil},
		{"with credentials", "/private/", "web", "0.1.0", "0.1.0", "", creds},
		{"credentials needed", "/private/", "web", "0.1.0", "", "the repository needs credentials", nil},
		{"credentials refused", "/private/", "web", "0.1.0", "", "the repository refused the credentials", &Credentials{Username: "reader", Password: "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, v, err := FromRepo(ctx, srv.Client(), srv.URL+tc.repo, tc.chart, tc.version, tc.creds)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want || !bytes.Equal(a, charts["/charts/web-"+tc.want+".tgz"]) {
				t.Errorf("version %s, want %s", v, tc.want)
			}
		})
	}
}

// TestFromRepoKeepsCredentialsOnItsHost: an index pointing at a chart on another host gets the
// chart without the repository's credentials being sent there.
func TestFromRepoKeepsCredentialsOnItsHost(t *testing.T) {
	t.Parallel()
	a, err := Package(testChart("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	var sawAuth atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuth.Store(true)
		}
		_, _ = w.Write(a)
	}))
	t.Cleanup(other.Close)
	idx := repo.NewIndexFile()
	if err := idx.MustAdd(&chart.Metadata{APIVersion: "v2", Name: "web", Version: "0.1.0"}, "web-0.1.0.tgz", other.URL, ""); err != nil {
		t.Fatal(err)
	}
	index, err := yaml.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "reader" || p != "repo-password" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(index)
	}))
	t.Cleanup(srv.Close)
	got, _, err := FromRepo(t.Context(), srv.Client(), srv.URL, "web", "", &Credentials{Username: "reader", Password: "repo-password"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, a) {
		t.Error("wrong archive")
	}
	if sawAuth.Load() {
		t.Error("the repository's credentials were sent to the chart's other host")
	}
}
