package names

import (
	"strings"
	"testing"
)

func TestRegistrationSecretName(t *testing.T) {
	tests := []struct {
		name       string
		a, b       [2]string // clientID, clientRandom
		legacySame bool      // the legacy encoding gives both the same name
	}{
		{"same bytes, different split", [2]string{"ab", "0123456789abcdef"}, [2]string{"a", "b0123456789abcdef"}, true},
		{"split moved into the random", [2]string{"cluster-1", "ff00"}, [2]string{"cluster-1ff", "00"}, true},
		{"empty clientID", [2]string{"", "ab"}, [2]string{"ab", ""}, true},
		{"different clients", [2]string{"a", "x"}, [2]string{"b", "x"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := RegistrationSecretName(tc.a[0], tc.a[1]), RegistrationSecretName(tc.b[0], tc.b[1])
			if a == b {
				t.Errorf("RegistrationSecretName(%q, %q) = RegistrationSecretName(%q, %q) = %q", tc.a[0], tc.a[1], tc.b[0], tc.b[1], a)
			}
			for _, n := range []string{a, b} {
				if len(n) != 63 || !strings.HasPrefix(n, "r-") {
					t.Errorf("name %q: want 63 characters starting with r-", n)
				}
			}
			la, lb := LegacyRegistrationSecretName(tc.a[0], tc.a[1]), LegacyRegistrationSecretName(tc.b[0], tc.b[1])
			if (la == lb) != tc.legacySame {
				t.Errorf("legacy names %q and %q: same=%v, want %v", la, lb, la == lb, tc.legacySame)
			}
			if la == a || lb == b {
				t.Errorf("legacy and current names coincide: %q %q / %q %q", la, a, lb, b)
			}
		})
	}
}

func TestLegacyRegistrationSecretNameIsStable(t *testing.T) {
	// Agents that predate the length-prefixed encoding wait for exactly this name:
	// sha256("ab") = fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603.
	if got, want := LegacyRegistrationSecretName("a", "b"), "c-fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620"; got != want {
		t.Errorf("LegacyRegistrationSecretName = %q, want %q", got, want)
	}
}

func TestAnswerSecretName(t *testing.T) {
	current := map[string]string{SecretNameAnnotation: SecretNameLengthPrefixed}
	if got := AnswerSecretName(current, "a", "b"); got != RegistrationSecretName("a", "b") {
		t.Errorf("annotated registration answered under %q", got)
	}
	if got := AnswerSecretName(nil, "a", "b"); got != LegacyRegistrationSecretName("a", "b") {
		t.Errorf("legacy registration answered under %q", got)
	}
}

func TestClusterNamespace(t *testing.T) {
	tests := []struct {
		name          string
		a, b          [3]string
		wantSame      bool
		wantMaxLen    int
		wantPrefixOfA string
	}{
		{"re-created cluster gets a fresh namespace", [3]string{"ws", "prod", "uid-1"}, [3]string{"ws", "prod", "uid-2"}, false, 63, "cluster-ws-prod-"},
		{"stable for one cluster", [3]string{"ws", "prod", "uid-1"}, [3]string{"ws", "prod", "uid-1"}, true, 63, "cluster-ws-prod-"},
		{"long names stay valid and distinct", [3]string{"ws", strings.Repeat("x", 60), "u"}, [3]string{"ws", strings.Repeat("x", 61), "u"}, false, 63, "cluster-ws-xxx"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := ClusterNamespace(tc.a[0], tc.a[1], tc.a[2]), ClusterNamespace(tc.b[0], tc.b[1], tc.b[2])
			if (a == b) != tc.wantSame {
				t.Errorf("%q vs %q: same=%v, want %v", a, b, a == b, tc.wantSame)
			}
			if len(a) > tc.wantMaxLen || len(b) > tc.wantMaxLen {
				t.Errorf("too long: %q (%d), %q (%d)", a, len(a), b, len(b))
			}
			if !strings.HasPrefix(a, tc.wantPrefixOfA) {
				t.Errorf("%q lacks prefix %q", a, tc.wantPrefixOfA)
			}
		})
	}
}
