package logging

import (
	"errors"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestQuietRelease: the manager's "leader election lost" after its stop began is logged as
// info; every other error stays an error.
func TestQuietRelease(t *testing.T) {
	var lines []string
	l := QuietRelease(funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
	l.Error(errors.New("leader election lost"), "error received after stop sequence was engaged")
	l.Error(errors.New("boom"), "error received after stop sequence was engaged")
	l.WithName("manager").Error(errors.New("leader election lost"), "other message")
	want := []string{
		`"level"=0 "msg"="Released the leader Lease while stopping"`,
		`"msg"="error received after stop sequence was engaged" "error"="boom"`,
		`"msg"="other message" "error"="leader election lost"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("logged %q, want %q", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %s, want %s", i, lines[i], want[i])
		}
	}
}
