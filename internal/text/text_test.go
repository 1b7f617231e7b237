package text

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456..."},
		{"ab€€€€", 8, "ab€..."},
		{"ab€€€€", 7, "ab..."}, // "€" is 3 bytes: the cut backs off to a rune start
	} {
		got := Clip(tc.in, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestRedactRepo(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/org/repo.git":                   "https://github.com/org/repo.git",
		"https://ghp_SECRET@github.com/org/repo.git":        "https://xxxxx@github.com/org/repo.git",
		"https://user:pass@github.com/org/repo.git":         "https://xxxxx@github.com/org/repo.git",
		"HTTPS://ghp_SECRET@github.com/org/repo.git":        "HTTPS://xxxxx@github.com/org/repo.git",
		"https://gitlab.example/x.git?private_token=SECRET": "https://gitlab.example/x.git",
		"https://gitlab.example/x.git#SECRET":               "https://gitlab.example/x.git",
		"http://a:b@host:8080/p@q/x.git":                    "http://xxxxx@host:8080/p@q/x.git",
		"git://tok@host/x.git":                              "git://xxxxx@host/x.git",
		"ssh://git@github.com/org/repo.git":                 "ssh://git@github.com/org/repo.git",
		"ssh://git:secret@github.com/org/repo.git":          "ssh://git:xxxxx@github.com/org/repo.git",
		"git@github.com:org/repo.git":                       "git@github.com:org/repo.git",
		"https://tok@host/x.git?a=1":                        "https://xxxxx@host/x.git",
		"https://host/x.git?SECRET@evil/":                   "https://host/x.git",
	} {
		if got := RedactRepo(in); got != want {
			t.Errorf("RedactRepo(%q) = %q, want %q", in, got, want)
		}
	}
}
