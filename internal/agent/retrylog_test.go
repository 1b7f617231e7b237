package agent

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/logging"
	"github.com/droverhq/drover/test/envtest"
)

// TestExpectedRetriesLogOneLineEach: an agent whose import token is rejected retries with
// backoff, logging one line per attempt (numbered, with the reason and what to do), without
// the stack trace the logger drover agent runs with (controller-runtime's zap in production
// settings, as internal/cli builds it) adds to every Error: 138 lines for 7 attempts before.
func TestExpectedRetriesLogOneLineEach(t *testing.T) {
	ws := env.Namespace(t)
	boot := importIdentity(t, ws)
	if err := env.Client.Delete(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "import-edge-0123abcd"}}); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	if err := env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifests.BootstrapSecret}, Data: boot}); err != nil {
		t.Fatal(err)
	}
	logs := &envtest.SyncBuffer{}
	log := logging.Capped(crzap.New(crzap.WriteTo(logs), crzap.ConsoleEncoder()))
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), log))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: env.Config, Namespace: ns, ClientID: "edge-" + ns, MetricsAddr: "0", HealthAddr: "0",
			RetryMin: 10 * time.Millisecond, RetryMax: 40 * time.Millisecond})
	}()
	const retry, attempts = "Agent not working, retrying later", 4
	envtest.Eventually(t, 30*time.Second, func() error {
		if n := strings.Count(logs.String(), retry); n < attempts {
			return fmt.Errorf("%d retries logged, want %d", n, attempts)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("agent: %v", err)
	}

	tests := []struct {
		name string
		bad  *regexp.Regexp
	}{
		{"goroutine header", regexp.MustCompile(`^goroutine \d+`)},
		{"stack frame file", regexp.MustCompile(`\.go:\d+$`)},
		{"continuation line", regexp.MustCompile(`^\s`)},
		{"not a log entry", regexp.MustCompile(`^[^\t]*$`)},
	}
	lines := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, l := range lines {
				if tc.bad.MatchString(l) {
					t.Errorf("log line %q (of a stack trace?); the log:\n%s", l, logs)
					return
				}
			}
		})
	}
	t.Run("one line per attempt", func(t *testing.T) {
		attempt := regexp.MustCompile(`"attempt": (\d+)`)
		n := 0
		for _, l := range lines {
			if !strings.Contains(l, retry) {
				continue
			}
			n++
			m := attempt.FindStringSubmatch(l)
			if m == nil || m[1] != strconv.Itoa(n) {
				t.Errorf("retry line %d %q, want attempt %d", n, l, n)
			}
			for _, want := range []string{`"reason": "RegistrationFailed"`, "Unauthorized", "drover token create"} {
				if !strings.Contains(l, want) {
					t.Errorf("retry line %q lacks %s", l, want)
				}
			}
		}
		if n < attempts {
			t.Errorf("%d retry lines, want at least %d", n, attempts)
		}
	})
}
