package names

import (
	"strings"
	"testing"
)

func TestRegistrationSecretName(t *testing.T) {
	tests := []struct {
		name, clientID, random, want string
	}{
		// sha256("ab") = fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603
		{"concatenation without separator", "a", "b", "c-fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620"},
		{"same bytes, different split, same name", "ab", "", "c-fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RegistrationSecretName(tc.clientID, tc.random)
			if got != tc.want || len(got) != 63 {
				t.Errorf("RegistrationSecretName(%q, %q) = %q (%d chars), want %q", tc.clientID, tc.random, got, len(got), tc.want)
			}
		})
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
