package webhook

import (
	"net/http"
	"slices"
	"testing"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/Example/Deploy.git", "github.com/example/deploy"},
		{"https://github.com/example/deploy", "github.com/example/deploy"},
		{"https://github.com/example/deploy/", "github.com/example/deploy"},
		{"https://token@github.com:443/example/deploy.git", "github.com/example/deploy"},
		{"git@github.com:example/deploy.git", "github.com/example/deploy"},
		{"github.com:example/deploy", "github.com/example/deploy"},
		{"ssh://git@gitlab.example.com:2222/group/sub/app.git", "gitlab.example.com/group/sub/app"},
		{"git://github.com/example/deploy.git", "github.com/example/deploy"},
		{"http://127.0.0.1:8080/public/x.git", "127.0.0.1/public/x"},
		{"not a url", ""},
		{"https://github.com/", ""},
		{"", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			if got := NormalizeURL(tc.in); got != tc.want {
				t.Errorf("NormalizeURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"ref":"refs/heads/main"}`)
	secret := []byte("s3cret")
	// HMAC-SHA256 of body with secret, computed independently (openssl dgst -sha256 -hmac s3cret).
	const good = "232a5e067b6a5aa567ed5a1d21a0dffaf6ef0eeecb6bd9bcf43b3d5ef3fc4f43"
	const mac = "232a5e067b6a5aa567ed5a1d21a0dffaf6ef0eeecb6bd9bcf43b3d5ef3fc4f44" // one bit off
	for _, tc := range []struct {
		name   string
		p      Provider
		header map[string]string
		secret []byte
		ok     bool
	}{
		{"github", GitHub, map[string]string{"X-Hub-Signature-256": "sha256=" + good}, secret, true},
		{"github wrong", GitHub, map[string]string{"X-Hub-Signature-256": "sha256=" + mac}, secret, false},
		{"github sha1 only", GitHub, map[string]string{"X-Hub-Signature": "sha1=" + good}, secret, false},
		{"github no prefix", GitHub, map[string]string{"X-Hub-Signature-256": good}, secret, false},
		{"github no secret configured", GitHub, map[string]string{"X-Hub-Signature-256": "sha256=" + good}, nil, false},
		{"gitea", Gitea, map[string]string{"X-Gitea-Signature": good}, secret, true},
		{"forgejo", Gitea, map[string]string{"X-Forgejo-Signature": good}, secret, true},
		{"gitea not hex", Gitea, map[string]string{"X-Gitea-Signature": "zz"}, secret, false},
		{"gitea none", Gitea, nil, secret, false},
		{"gitlab", GitLab, map[string]string{"X-Gitlab-Token": "s3cret"}, secret, true},
		{"gitlab wrong", GitLab, map[string]string{"X-Gitlab-Token": "s3cre"}, secret, false},
		{"gitlab none", GitLab, nil, secret, false},
		{"bitbucket", Bitbucket, map[string]string{"X-Hub-Signature": "sha256=" + good}, secret, true},
		{"bitbucket unsigned", Bitbucket, nil, secret, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			err := verify(tc.p, h, body, tc.secret)
			if (err == nil) != tc.ok {
				t.Errorf("verify: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestDetectAndParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		header   map[string]string
		body     string
		provider Provider
		push     bool
		urls     []string
		refs     []string
	}{
		{"github", map[string]string{"X-GitHub-Event": "push"},
			`{"ref":"refs/heads/main","repository":{"clone_url":"https://github.com/o/r.git","ssh_url":"git@github.com:o/r.git","default_branch":"main"}}`,
			GitHub, true, []string{"https://github.com/o/r.git", "git@github.com:o/r.git"}, []string{"refs/heads/main"}},
		{"github ping", map[string]string{"X-GitHub-Event": "ping"}, `{}`, GitHub, false, nil, nil},
		{"gitea sends github headers too", map[string]string{"X-GitHub-Event": "push", "X-Gitea-Event": "push"},
			`{"ref":"refs/tags/v1","repository":{"clone_url":"https://gitea.example.com/o/r.git"}}`,
			Gitea, true, []string{"https://gitea.example.com/o/r.git"}, []string{"refs/tags/v1"}},
		{"gitlab tag", map[string]string{"X-Gitlab-Event": "Tag Push Hook"},
			`{"object_kind":"tag_push","ref":"refs/tags/v2","project":{"git_http_url":"https://gitlab.com/g/p.git","git_ssh_url":"git@gitlab.com:g/p.git"}}`,
			GitLab, true, []string{"https://gitlab.com/g/p.git", "git@gitlab.com:g/p.git"}, []string{"refs/tags/v2"}},
		{"gitlab merge request", map[string]string{"X-Gitlab-Event": "Merge Request Hook"}, `{}`, GitLab, false, nil, nil},
		{"bitbucket", map[string]string{"X-Event-Key": "repo:push"},
			`{"push":{"changes":[{"new":{"type":"branch","name":"main"}},{"new":null},{"new":{"type":"tag","name":"v3"}}]},"repository":{"full_name":"team/repo","links":{"html":{"href":"https://bitbucket.org/team/repo"}}}}`,
			Bitbucket, true, []string{"https://bitbucket.org/team/repo"}, []string{"refs/heads/main", "refs/tags/v3"}},
		{"bitbucket without links", map[string]string{"X-Event-Key": "repo:push"},
			`{"push":{"changes":[]},"repository":{"full_name":"team/repo"}}`,
			Bitbucket, true, []string{"https://bitbucket.org/team/repo"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			p, event := detect(h)
			if p != tc.provider {
				t.Fatalf("provider %q, want %q", p, tc.provider)
			}
			if isPush(p, event) != tc.push {
				t.Fatalf("isPush(%s, %s) = %v", p, event, !tc.push)
			}
			if !tc.push {
				return
			}
			got, err := parsePush(p, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.URLs[:len(tc.urls)], tc.urls) || !slices.Equal(got.Refs, tc.refs) {
				t.Errorf("urls %v refs %v, want %v %v", got.URLs, got.Refs, tc.urls, tc.refs)
			}
		})
	}
}

func TestFollows(t *testing.T) {
	t.Parallel()
	main := &push{Refs: []string{"refs/heads/main"}, DefaultBranch: "main"}
	noDefault := &push{Refs: []string{"refs/heads/dev"}}
	tag := &push{Refs: []string{"refs/tags/v1"}, DefaultBranch: "main"}
	for _, tc := range []struct {
		name string
		spec fleetv1alpha1.GitRepoSpec
		p    *push
		want bool
	}{
		{"branch pushed", fleetv1alpha1.GitRepoSpec{Branch: "main"}, main, true},
		{"other branch", fleetv1alpha1.GitRepoSpec{Branch: "dev"}, main, false},
		{"default branch", fleetv1alpha1.GitRepoSpec{}, main, true},
		{"default branch is another", fleetv1alpha1.GitRepoSpec{}, &push{Refs: []string{"refs/heads/dev"}, DefaultBranch: "main"}, false},
		{"default branch unknown", fleetv1alpha1.GitRepoSpec{}, noDefault, true},
		{"tag", fleetv1alpha1.GitRepoSpec{Tag: "v1"}, tag, true},
		{"tag push, branch repo", fleetv1alpha1.GitRepoSpec{Branch: "main"}, tag, false},
		{"revision", fleetv1alpha1.GitRepoSpec{Revision: "abcdef0"}, main, false},
		{"paused", fleetv1alpha1.GitRepoSpec{Branch: "main", Paused: true}, main, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := follows(&fleetv1alpha1.GitRepo{Spec: tc.spec}, tc.p); got != tc.want {
				t.Errorf("follows = %v, want %v", got, tc.want)
			}
		})
	}
}
