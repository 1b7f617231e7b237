package logging

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestCapped: nothing above MaxVerbosity gets through (client-go's request and response bodies
// are logged at 8), even from a logger derived with names and values; errors and lower levels do.
func TestCapped(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: 100})
	l := Capped(base).WithName("controller").WithValues("k", "v")
	for v := range 12 {
		l.V(v).Info("line", "v", v)
	}
	l.Error(nil, "failed")
	if got := len(lines); got != MaxVerbosity+2 {
		t.Fatalf("%d lines, want %d (levels 0..%d and the error):\n%s", got, MaxVerbosity+2, MaxVerbosity, strings.Join(lines, "\n"))
	}
	if l.V(MaxVerbosity+1).Enabled() || !l.V(MaxVerbosity).Enabled() {
		t.Errorf("V(%d) enabled %t, V(%d) enabled %t", MaxVerbosity+1, l.V(MaxVerbosity+1).Enabled(), MaxVerbosity, l.V(MaxVerbosity).Enabled())
	}
	for _, line := range lines {
		if !strings.Contains(line, "controller") || !strings.Contains(line, `"k"="v"`) {
			t.Errorf("line lost the logger's name or values: %s", line)
		}
	}
}
