// Package ocireg is a small read-only OCI distribution registry for tests: it serves Helm charts
// stored as OCI artifacts the way `helm push` stores them (a manifest whose config is the
// chart's metadata and whose one layer is the packaged chart), over the distribution API's pull
// endpoints (/v2/, manifests, blobs, tags/list), optionally behind basic auth. Serve it with
// httptest.NewTLSServer: drover pulls OCI charts over HTTPS only.
package ocireg

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Media types of a Helm chart stored in an OCI registry.
const (
	ManifestMediaType    = "application/vnd.oci.image.manifest.v1+json"
	ChartConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	ChartLayerMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// Registry holds repositories of tagged manifests and their blobs.
type Registry struct {
	// Username and Password, when set, are required as basic auth on every request.
	Username, Password string

	mu    sync.Mutex
	blobs map[string][]byte            // digest → content
	tags  map[string]map[string]string // repository → tag → manifest digest
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{blobs: map[string][]byte{}, tags: map[string]map[string]string{}}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int    `json:"size"`
}

// PushChart stores a packaged chart as repository:tag (the chart's version, "+" written "_" as
// Helm does) and returns the manifest's digest. layerMediaType overrides the chart layer's media
// type ("" for Helm's), to test a manifest that is not a chart.
func (r *Registry) PushChart(repository, tag string, archive []byte, layerMediaType string) string {
	if layerMediaType == "" {
		layerMediaType = ChartLayerMediaType
	}
	config := []byte(fmt.Sprintf(`{"name":%q,"version":%q,"apiVersion":"v2"}`, repository[strings.LastIndex(repository, "/")+1:], tag))
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     ManifestMediaType,
		"config":        descriptor{ChartConfigMediaType, digestOf(config), len(config)},
		"layers":        []descriptor{{layerMediaType, digestOf(archive), len(archive)}},
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range [][]byte{config, archive, manifest} {
		r.blobs[digestOf(b)] = b
	}
	if r.tags[repository] == nil {
		r.tags[repository] = map[string]string{}
	}
	r.tags[repository][strings.ReplaceAll(tag, "+", "_")] = digestOf(manifest)
	return digestOf(manifest)
}

// Corrupt replaces the content stored under digest (a blob no longer matching its digest).
func (r *Registry) Corrupt(digest string, content []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[digest] = content
}

// ServeHTTP serves the distribution API's pull endpoints.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.Username != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.Username || p != r.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="ocireg"`)
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "read-only registry")
		return
	}
	p := strings.TrimPrefix(req.URL.Path, "/v2/")
	if p == "" || req.URL.Path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case strings.HasSuffix(p, "/tags/list"):
		repo := strings.TrimSuffix(p, "/tags/list")
		tags, ok := r.tags[repo]
		if !ok {
			writeError(w, http.StatusNotFound, "NAME_UNKNOWN", "repository "+repo+" not found")
			return
		}
		list := make([]string, 0, len(tags))
		for t := range tags {
			list = append(list, t)
		}
		sort.Strings(list)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": repo, "tags": list})
	case strings.Contains(p, "/manifests/"):
		i := strings.LastIndex(p, "/manifests/")
		repo, ref := p[:i], p[i+len("/manifests/"):]
		digest := ref
		if !strings.HasPrefix(ref, "sha256:") {
			if digest = r.tags[repo][ref]; digest == "" {
				writeError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest "+repo+":"+ref+" not found")
				return
			}
		}
		r.serveBlob(w, req, digest, ManifestMediaType)
	case strings.Contains(p, "/blobs/"):
		r.serveBlob(w, req, p[strings.LastIndex(p, "/blobs/")+len("/blobs/"):], "application/octet-stream")
	default:
		writeError(w, http.StatusNotFound, "NAME_UNKNOWN", "not found")
	}
}

func (r *Registry) serveBlob(w http.ResponseWriter, req *http.Request, digest, mediaType string) {
	b, ok := r.blobs[digest]
	if !ok {
		writeError(w, http.StatusNotFound, "BLOB_UNKNOWN", digest+" not found")
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if req.Method == http.MethodGet {
		_, _ = w.Write(b)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}
