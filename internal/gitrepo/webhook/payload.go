package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Provider is a Git hosting service whose push webhooks drover understands. Its name is also
// the key of its secret in the webhook Secret.
type Provider string

// The providers. Gitea also covers Forgejo and Gogs (the same payload and signature).
const (
	GitHub    Provider = "github"
	GitLab    Provider = "gitlab"
	Gitea     Provider = "gitea"
	Bitbucket Provider = "bitbucket"
)

// Providers lists every provider, in the order their headers are recognised.
var Providers = []Provider{Gitea, GitLab, Bitbucket, GitHub}

// detect names the provider of a request by its event header, and the event. Gitea and Forgejo
// also send GitHub's headers, so they are recognised first.
func detect(h http.Header) (Provider, string) {
	for _, k := range []string{"X-Forgejo-Event", "X-Gitea-Event", "X-Gogs-Event"} {
		if v := h.Get(k); v != "" {
			return Gitea, v
		}
	}
	if v := h.Get("X-Gitlab-Event"); v != "" {
		return GitLab, v
	}
	if v := h.Get("X-Event-Key"); v != "" {
		return Bitbucket, v
	}
	if v := h.Get("X-GitHub-Event"); v != "" {
		return GitHub, v
	}
	return "", ""
}

// verify checks the request's signature (or token) against secret. The error says what is
// wrong without any secret or signature value.
func verify(p Provider, h http.Header, body, secret []byte) error {
	if len(secret) == 0 {
		return fmt.Errorf("no %s secret is configured", p)
	}
	switch p {
	case GitHub:
		return hmacHex(h.Get("X-Hub-Signature-256"), "sha256=", body, secret, "X-Hub-Signature-256")
	case Bitbucket:
		return hmacHex(h.Get("X-Hub-Signature"), "sha256=", body, secret, "X-Hub-Signature")
	case Gitea:
		for _, k := range []string{"X-Forgejo-Signature", "X-Gitea-Signature", "X-Gogs-Signature"} {
			if v := h.Get(k); v != "" {
				return hmacHex(v, "", body, secret, k)
			}
		}
		return fmt.Errorf("no X-Gitea-Signature or X-Forgejo-Signature header")
	case GitLab:
		tok := h.Get("X-Gitlab-Token")
		if tok == "" {
			return fmt.Errorf("no X-Gitlab-Token header")
		}
		// Compared as digests: ConstantTimeCompare returns early on a length mismatch.
		got, want := sha256.Sum256([]byte(tok)), sha256.Sum256(secret)
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return fmt.Errorf("X-Gitlab-Token does not match")
		}
		return nil
	}
	return fmt.Errorf("unknown provider %q", p)
}

// hmacHex checks a hex HMAC-SHA256 of body (after prefix) given in header name.
func hmacHex(sig, prefix string, body, secret []byte, name string) error {
	if sig == "" {
		return fmt.Errorf("no %s header", name)
	}
	hexSig, ok := strings.CutPrefix(sig, prefix)
	if !ok {
		return fmt.Errorf("%s is not %s<hex HMAC-SHA256>", name, prefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%s is not hex", name)
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return fmt.Errorf("%s does not match the body", name)
	}
	return nil
}

// push is what drover needs of a push event: the repository's URLs, the refs pushed (full
// names, e.g. refs/heads/main) and the default branch when the payload says.
type push struct {
	URLs          []string
	Refs          []string
	DefaultBranch string
}

// isPush says whether event (the provider's event header) is a push.
func isPush(p Provider, event string) bool {
	switch p {
	case GitHub, Gitea:
		return event == "push"
	case GitLab:
		return event == "Push Hook" || event == "Tag Push Hook"
	case Bitbucket:
		return event == "repo:push"
	}
	return false
}

// parsePush decodes a push payload of provider p.
func parsePush(p Provider, body []byte) (*push, error) {
	switch p {
	case GitHub, Gitea:
		// Gitea's (and Forgejo's) push payload follows GitHub's for these fields.
		var v struct {
			Ref        string `json:"ref"`
			Repository struct {
				CloneURL      string `json:"clone_url"`
				SSHURL        string `json:"ssh_url"`
				GitURL        string `json:"git_url"`
				HTMLURL       string `json:"html_url"`
				DefaultBranch string `json:"default_branch"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("decode %s push payload: %w", p, err)
		}
		r := v.Repository
		return &push{URLs: nonEmpty(r.CloneURL, r.SSHURL, r.GitURL, r.HTMLURL), Refs: nonEmpty(v.Ref), DefaultBranch: r.DefaultBranch}, nil
	case GitLab:
		var v struct {
			Ref     string `json:"ref"`
			Project struct {
				GitHTTPURL    string `json:"git_http_url"`
				GitSSHURL     string `json:"git_ssh_url"`
				WebURL        string `json:"web_url"`
				DefaultBranch string `json:"default_branch"`
			} `json:"project"`
			Repository struct {
				GitHTTPURL string `json:"git_http_url"`
				GitSSHURL  string `json:"git_ssh_url"`
				Homepage   string `json:"homepage"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("decode gitlab push payload: %w", err)
		}
		pr, r := v.Project, v.Repository
		return &push{URLs: nonEmpty(pr.GitHTTPURL, pr.GitSSHURL, pr.WebURL, r.GitHTTPURL, r.GitSSHURL, r.Homepage),
			Refs: nonEmpty(v.Ref), DefaultBranch: pr.DefaultBranch}, nil
	case Bitbucket:
		var v struct {
			Push struct {
				Changes []struct {
					New *struct {
						Type string `json:"type"`
						Name string `json:"name"`
					} `json:"new"`
				} `json:"changes"`
			} `json:"push"`
			Repository struct {
				FullName string `json:"full_name"`
				Links    struct {
					HTML struct {
						Href string `json:"href"`
					} `json:"html"`
				} `json:"links"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("decode bitbucket push payload: %w", err)
		}
		out := &push{URLs: nonEmpty(v.Repository.Links.HTML.Href)}
		if len(out.URLs) == 0 && v.Repository.FullName != "" {
			out.URLs = []string{"https://bitbucket.org/" + v.Repository.FullName}
		}
		for _, c := range v.Push.Changes {
			if c.New == nil {
				continue // a deleted branch or tag
			}
			switch c.New.Type {
			case "branch", "named_branch":
				out.Refs = append(out.Refs, "refs/heads/"+c.New.Name)
			case "tag", "annotated_tag":
				out.Refs = append(out.Refs, "refs/tags/"+c.New.Name)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown provider %q", p)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// NormalizeURL reduces a repository URL to "host/path": the https, ssh, scp-style
// (git@host:org/repo.git) and git:// forms of one repository, and its web page, give the same
// key. The scheme, user, port, a ".git" suffix and slashes around the path are dropped and the
// result is lowercased (GitHub, GitLab, Gitea and Bitbucket treat owner and repository names
// case-insensitively). It returns "" for something that is not a URL.
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	var host, p string
	if !strings.Contains(raw, "://") {
		// scp-style: [user@]host:path
		at := strings.LastIndex(raw[:max(strings.Index(raw, ":"), 0)], "@")
		rest := raw[at+1:]
		h, path, ok := strings.Cut(rest, ":")
		if !ok || h == "" {
			return ""
		}
		host, p = h, path
	} else {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return ""
		}
		host, p = u.Hostname(), u.Path
	}
	p = strings.Trim(p, "/")
	p = strings.TrimSuffix(p, ".git")
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	return strings.ToLower(host + "/" + p)
}
