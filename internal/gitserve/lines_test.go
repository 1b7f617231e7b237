package gitserve

import (
	"strings"
	"testing"
)

// TestStderrLines: git http-backend's messages, which come without a newline, are written as
// lines of their own, so they do not splice into the next log line.
func TestStderrLines(t *testing.T) {
	var b strings.Builder
	l := &lines{w: &b}
	for _, m := range []string{"Not a git repository: '/srv/nope.git'", "", "fatal: x\n"} {
		if n, err := l.Write([]byte(m)); err != nil || n != len(m) {
			t.Fatalf("Write(%q) = %d, %v", m, n, err)
		}
	}
	if want := "git http-backend: Not a git repository: '/srv/nope.git'\ngit http-backend: fatal: x\n"; b.String() != want {
		t.Errorf("written %q, want %q", b.String(), want)
	}
}
