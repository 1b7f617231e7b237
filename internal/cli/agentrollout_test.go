package cli

import (
	"strings"
	"testing"
)

// TestAgentRolloutBudget: --agent-rollout-max-unavailable takes a positive number or a
// percentage, "" for no bound; anything else is an error naming the flag.
func TestAgentRolloutBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want "": no bound; "error": refused
	}{
		{"10%", "10%"}, {"5", "5"}, {"", ""},
		{"0", "error"}, {"0%", "error"}, {"-3", "error"}, {"ten", "error"}, {"10 %", "error"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			o := &hostedOptions{agentRollout: tc.in}
			got, err := o.agentRolloutBudget()
			switch {
			case tc.want == "error":
				if err == nil || !strings.Contains(err.Error(), "--agent-rollout-max-unavailable") {
					t.Fatalf("%q: %v, %v; want an error naming the flag", tc.in, got, err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "" && got != nil, tc.want != "" && (got == nil || got.String() != tc.want):
				t.Fatalf("%q: %v, want %q", tc.in, got, tc.want)
			}
		})
	}
}
