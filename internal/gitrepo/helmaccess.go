package gitrepo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/helmchart"
)

// helmHTTP downloads charts from Helm repositories and OCI registries (bounded also by the
// fetch's context) when the GitRepo trusts no extra CA.
var helmHTTP = &http.Client{Timeout: time.Minute}

// helmAccess is how one GitRepo's paths download charts: the HTTP client (the system roots plus
// the helm Secret's cacerts) and the Secret's credentials with the URLs they may be sent to.
type helmAccess struct {
	client *http.Client
	creds  *helmchart.Credentials
	only   *regexp.Regexp // nil: every URL
}

// defaultHelmAccess downloads without credentials (no spec.helmSecretName, or a local preview).
var defaultHelmAccess = &helmAccess{client: helmHTTP}

// credsFor returns the credentials for a repository or registry URL, nil when they may not go there.
func (a *helmAccess) credsFor(url string) *helmchart.Credentials {
	if a.creds == nil || a.only != nil && !a.only.MatchString(url) {
		return nil
	}
	return a.creds
}

// helmAccessFor reads gr's spec.helmSecretName. Its values never appear in an error.
func (r *Reconciler) helmAccessFor(ctx context.Context, gr *fleetv1alpha1.GitRepo) (*helmAccess, error) {
	name := gr.Spec.HelmSecretName
	if name == "" {
		return defaultHelmAccess, nil
	}
	a := &helmAccess{client: helmHTTP}
	if re := gr.Spec.HelmRepoURLRegex; re != "" {
		var err error
		if a.only, err = regexp.Compile(re); err != nil {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil, "spec.helmRepoURLRegex %q is not a regular expression: %s", re, err.Error())
		}
	}
	secret := &corev1.Secret{}
	if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: gr.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil, "Secret %s (spec.helmSecretName) not found in namespace %s", name, gr.Namespace)
		}
		return nil, failf(fleetv1alpha1.ReasonFetchFailed, err, "read Secret %s/%s", gr.Namespace, name)
	}
	d := secret.Data
	pass := d[fleetv1alpha1.GitKeyPassword]
	if len(pass) == 0 {
		pass = d[fleetv1alpha1.GitKeyToken]
	}
	if user := d[fleetv1alpha1.GitKeyUsername]; len(user) > 0 || len(pass) > 0 {
		if len(user) == 0 || len(pass) == 0 {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil, "Secret %s (spec.helmSecretName): set both %s and %s (or %s)",
				name, fleetv1alpha1.GitKeyUsername, fleetv1alpha1.GitKeyPassword, fleetv1alpha1.GitKeyToken)
		}
		a.creds = &helmchart.Credentials{Username: string(user), Password: string(pass)}
	}
	if ca := d[fleetv1alpha1.GitKeyCACerts]; len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil, "Secret %s (spec.helmSecretName): %s holds no PEM certificate", name, fleetv1alpha1.GitKeyCACerts)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		a.client = &http.Client{Timeout: helmHTTP.Timeout, Transport: tr}
	}
	return a, nil
}

// chart downloads the chart h names from an HTTP(S) Helm repository (helm.repo + helm.chart) or
// an OCI registry (helm.chart oci://host/path/name, or helm.repo oci://host/path + helm.chart
// name), once per commit. It returns the archive and a description of its source.
func (a *helmAccess) chart(ctx context.Context, co *checkout, h *HelmConfig) ([]byte, string, error) {
	ref, oci := "", false
	switch {
	case isURL(h.Chart):
		if h.Repo != "" {
			return nil, "", fmt.Errorf("helm.chart %s is the URL of a chart archive: leave helm.repo empty", h.Chart)
		}
		if h.Version != "" {
			return nil, "", fmt.Errorf("helm.version: helm.chart %s is the URL of one chart archive: leave helm.version empty", h.Chart)
		}
	case strings.HasPrefix(h.Chart, helmchart.OCIScheme):
		if h.Repo != "" {
			return nil, "", fmt.Errorf("helm.chart %s is an OCI reference: leave helm.repo empty", h.Chart)
		}
		ref, oci = h.Chart, true
	case strings.HasPrefix(h.Repo, helmchart.OCIScheme):
		if h.Chart == "" {
			return nil, "", fmt.Errorf("helm.repo %s needs helm.chart, the chart's name in the registry", h.Repo)
		}
		ref, oci = strings.TrimSuffix(h.Repo, "/")+"/"+h.Chart, true
	case h.Chart == "":
		return nil, "", fmt.Errorf("helm.repo needs helm.chart, the chart's name in the repository")
	case !strings.HasPrefix(h.Repo, "https://") && !strings.HasPrefix(h.Repo, "http://"):
		return nil, "", fmt.Errorf("helm.repo %q: use an http(s):// Helm repository or an oci:// registry", h.Repo)
	}
	key := h.Repo + "\x00" + h.Chart + "\x00" + h.Version
	if rc, ok := co.charts[key]; ok {
		return rc.archive, rc.source, nil
	}
	var archive []byte
	var version, source string
	var err error
	switch {
	case isURL(h.Chart):
		if archive, version, err = a.chartArchive(ctx, h.Chart); err != nil {
			return nil, "", fmt.Errorf("helm.chart: %w", untrusted(err))
		}
		source = fmt.Sprintf("chart %s version %s", h.Chart, version)
	case oci:
		if archive, version, err = helmchart.FromOCI(ctx, a.client, ref, h.Version, a.credsFor(ref)); err != nil {
			return nil, "", fmt.Errorf("helm.chart: %w", untrusted(err))
		}
		source = fmt.Sprintf("chart %s version %s", ref, version)
	default:
		if archive, version, err = helmchart.FromRepo(ctx, a.client, h.Repo, h.Chart, h.Version, a.credsFor(h.Repo)); err != nil {
			return nil, "", fmt.Errorf("helm.chart %s from helm.repo: %w", h.Chart, untrusted(err))
		}
		source = fmt.Sprintf("chart %s %s from %s", h.Chart, version, h.Repo)
	}
	if co.charts == nil {
		co.charts = map[string]repoChart{}
	}
	co.charts[key] = repoChart{archive: archive, version: version, source: source}
	return archive, source, nil
}

// isURL reports whether a helm.chart is the http(s):// URL of a chart archive.
func isURL(chart string) bool {
	return strings.HasPrefix(chart, "https://") || strings.HasPrefix(chart, "http://")
}

// chartArchive downloads the chart archive at url (helm.chart as a URL, as Fleet allows): as a
// chart from a Helm repository, with the helm Secret's credentials when they may go to url, at
// most helmchart.MaxArchiveSize bytes, and loadable by Helm. It returns the archive and the
// chart's version.
func (a *helmAccess) chartArchive(ctx context.Context, url string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	creds := a.credsFor(url)
	if creds != nil {
		req.SetBasicAuth(creds.Username, creds.Password)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && creds == nil:
		return nil, "", fmt.Errorf("GET %s: %s: the server needs credentials (spec.helmSecretName)", url, resp.Status)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, "", fmt.Errorf("GET %s: %s: the server refused the credentials", url, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	archive, err := io.ReadAll(io.LimitReader(resp.Body, helmchart.MaxArchiveSize+1))
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	if len(archive) > helmchart.MaxArchiveSize {
		return nil, "", fmt.Errorf("GET %s: more than %d bytes", url, helmchart.MaxArchiveSize)
	}
	c, err := helmchart.Load(archive)
	if err != nil {
		return nil, "", fmt.Errorf("%s is not a chart archive: %w", url, err)
	}
	return archive, c.Metadata.Version, nil
}

// untrusted says what to do when a repository's TLS certificate is not trusted.
func untrusted(err error) error {
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknown) || errors.As(err, &verify) {
		return fmt.Errorf("%w (the server's TLS certificate is not trusted: add its CA as %s to spec.helmSecretName's Secret)", err, fleetv1alpha1.GitKeyCACerts)
	}
	return err
}
