package heartbeat

import (
	"strings"
	"testing"
)

func TestReportedVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3": "v1.2.3", "v1.2.3+build.5": "v1.2.3+build.5", "v0.0.0-dev": "v0.0.0-dev",
		"": "", "(devel)": "", "v1\x1b[31m": "", "v1 2": "", strings.Repeat("9", 129): "",
	} {
		if got := reportedVersion(v); got != want {
			t.Errorf("reportedVersion(%q) = %q, want %q", v, got, want)
		}
	}
}
