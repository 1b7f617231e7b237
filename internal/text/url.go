package text

import (
	"net/url"
	"strings"
)

// RedactRepo is a Git repository URL fit to show: an http(s) or git:// URL loses its user
// part and its query (where a token could sit: https://TOKEN@host/repo,
// ...?private_token=...), any URL its password. An SSH user (git@host:org/repo) is kept: it
// names an account, not a secret.
func RedactRepo(repo string) string {
	scheme, rest, ok := strings.Cut(repo, "://")
	if !ok {
		return repo // user@host:path (SSH)
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "git":
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			rest = rest[:i]
		}
		hostEnd := strings.IndexByte(rest, '/')
		if hostEnd < 0 {
			hostEnd = len(rest)
		}
		if at := strings.LastIndexByte(rest[:hostEnd], '@'); at >= 0 {
			rest = "xxxxx" + rest[at:]
		}
		return scheme + "://" + rest
	}
	u, err := url.Parse(repo)
	if err != nil {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			return scheme + "://xxxxx" + rest[at:] // unparseable: hide all of the user part
		}
		return repo
	}
	return u.Redacted()
}
