package cli

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/internal/version"
)

// TestAgentImageDefaults: the server's --agent-image and `agent install --image` default to
// this build's own image, never :latest.
func TestAgentImageDefaults(t *testing.T) {
	t.Parallel()
	want := version.ImageRepository + ":" + version.Get().Version
	root := NewRootCommand()
	for _, tc := range []struct{ cmd, flag string }{{"server", "agent-image"}, {"agent install", "image"}} {
		cmd, _, err := root.Find(strings.Fields(tc.cmd))
		if err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags().Lookup(tc.flag)
		if f == nil {
			t.Fatalf("%s has no --%s", tc.cmd, tc.flag)
		}
		if f.DefValue != want || strings.Contains(f.DefValue, ":latest") {
			t.Errorf("%s --%s defaults to %q, want %q", tc.cmd, tc.flag, f.DefValue, want)
		}
	}
}
