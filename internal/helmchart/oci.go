package helmchart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// OCIScheme prefixes a chart reference in an OCI registry (oci://host/path/name).
const OCIScheme = "oci://"

// chartLayerMediaType is the layer of a Helm chart stored in an OCI registry (`helm push`).
const chartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// maxManifestSize bounds an OCI manifest read from a registry.
const maxManifestSize = 4 << 20

// Credentials are a Helm repository's or an OCI registry's basic-auth user and password.
type Credentials struct {
	Username, Password string
}

// FromOCI pulls a chart from an OCI registry as `helm pull oci://...` does: ref is
// oci://host[:port]/path/name (a ":tag" suffix pins the version), version an exact version or
// a semver constraint (default: the highest stable version tagged). It talks HTTPS through hc,
// with creds when given, checks the content against the digests the registry names, and returns
// the archive and its version.
func FromOCI(ctx context.Context, hc *http.Client, ref, version string, creds *Credentials) ([]byte, string, error) {
	name, ok := strings.CutPrefix(ref, OCIScheme)
	if !ok {
		return nil, "", fmt.Errorf("%q is not an %s reference", ref, OCIScheme)
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag := name[i+1:]
		if version != "" && version != tag {
			return nil, "", fmt.Errorf("%s names tag %s but version is %s: set one", ref, tag, version)
		}
		name, version = name[:i], tag
	}
	repo, err := remote.NewRepository(name)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", ref, err)
	}
	ac := &auth.Client{Client: hc, Cache: auth.NewCache()}
	if creds != nil {
		ac.Credential = auth.StaticCredential(repo.Reference.Registry, auth.Credential{Username: creds.Username, Password: creds.Password})
	}
	repo.Client = ac
	tag, err := ociTag(ctx, repo, version)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", ref, err)
	}
	desc, rc, err := repo.FetchReference(ctx, strings.ReplaceAll(tag, "+", "_"))
	if err != nil {
		return nil, "", fmt.Errorf("%s version %s: %w", ref, tag, ociAuthError(err))
	}
	if desc.Size > maxManifestSize {
		_ = rc.Close()
		return nil, "", fmt.Errorf("%s version %s: manifest of %d bytes is too large", ref, tag, desc.Size)
	}
	raw, err := content.ReadAll(rc, desc)
	_ = rc.Close()
	if err != nil {
		return nil, "", fmt.Errorf("%s version %s: manifest: %w", ref, tag, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", fmt.Errorf("%s version %s: manifest: %w", ref, tag, err)
	}
	var layer *ocispec.Descriptor
	for i := range m.Layers {
		if m.Layers[i].MediaType == chartLayerMediaType {
			layer = &m.Layers[i]
			break
		}
	}
	if layer == nil {
		return nil, "", fmt.Errorf("%s version %s is not a Helm chart (no %s layer)", ref, tag, chartLayerMediaType)
	}
	if layer.Size > MaxArchiveSize {
		return nil, "", fmt.Errorf("%s version %s: chart of %d bytes is larger than %d", ref, tag, layer.Size, MaxArchiveSize)
	}
	lr, err := repo.Fetch(ctx, *layer)
	if err != nil {
		return nil, "", fmt.Errorf("%s version %s: chart: %w", ref, tag, err)
	}
	archive, err := content.ReadAll(io.NopCloser(lr), *layer)
	_ = lr.Close()
	if err != nil {
		return nil, "", fmt.Errorf("%s version %s: chart does not match its digest: %w", ref, tag, err)
	}
	if _, err := Load(archive); err != nil {
		return nil, "", fmt.Errorf("%s version %s: %w", ref, tag, err)
	}
	return archive, tag, nil
}

// ociTag picks the tag to pull: version itself when it is an exact version, else the highest
// semver tag satisfying the constraint (any stable version when version is empty).
func ociTag(ctx context.Context, repo *remote.Repository, version string) (string, error) {
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v")); err == nil {
		return version, nil
	}
	constraint := version
	if constraint == "" {
		constraint = "*"
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("version %q is neither a version nor a semver constraint: %w", version, err)
	}
	var versions []*semver.Version
	if err := repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if v, err := semver.StrictNewVersion(strings.ReplaceAll(t, "_", "+")); err == nil {
				versions = append(versions, v)
			}
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("list tags: %w", ociAuthError(err))
	}
	sort.Sort(sort.Reverse(semver.Collection(versions)))
	for _, v := range versions {
		if c.Check(v) {
			return v.Original(), nil
		}
	}
	if version == "" {
		return "", errors.New("no version tagged")
	}
	return "", fmt.Errorf("no tagged version matches %s", version)
}

// ociAuthError says in words when the registry wants credentials or refused them.
func ociAuthError(err error) error {
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("the registry needs credentials: %w", err)
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return fmt.Errorf("the registry refused the credentials: %w", err)
	}
	return err
}
