package dashboard_test

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/dashboard"
	"github.com/droverhq/drover/test/envtest"
)

var watchRE = regexp.MustCompile(`data-watch="([^"]*)"`)

// stream opens a page's event stream and returns its events ("ready", "change") as they come.
func (b *browser) stream(ctx context.Context, page string) <-chan string {
	b.t.Helper()
	m := watchRE.FindStringSubmatch(page)
	if m == nil || m[1] == "" {
		b.t.Fatal("the page names no event stream")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+html.UnescapeString(m[1]), nil)
	if err != nil {
		b.t.Fatal(err)
	}
	c := &http.Client{Jar: b.c.Jar} // no timeout: the stream stays open
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b.t.Fatalf("event stream: status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer func() { _ = resp.Body.Close() }()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				out <- ev
			}
		}
	}()
	return out
}

// next waits for the stream's next event named want, failing after timeout.
func next(t *testing.T, events <-chan string, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("event stream closed before %q", want)
			}
			if ev == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %q event within %s", want, timeout)
		}
	}
}

// TestLiveUpdates: a page's event stream, watched with the viewer's identity from the
// resourceVersion the page was read at, says "change" when a Cluster it shows changes (and,
// on a cluster's page, when an Event about it is recorded); the content region fetched again
// shows the change.
func TestLiveUpdates(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	createAll(t, eksCluster(ns, "live"))
	b := newBrowser(t, serverDashboard(t))
	b.signIn(namespaceViewer(t, ns, "watcher", ns), ns)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	t.Run("hosted clusters list", func(t *testing.T) {
		page := b.page("/hosted?namespace=" + ns)
		mustContain(t, page, `data-cluster="`+ns+`/live"`)
		// A change made before the stream opens is not lost: the watch starts at the page's read.
		c := must(t, eksCluster(ns, "live"))
		c.Status.Phase = managementv1alpha1.PhaseCreating
		setStatus(t, c)
		events := b.stream(ctx, page)
		next(t, events, "change", 15*time.Second)
		frag := b.fragment("/hosted?namespace=" + ns)
		mustContain(t, frag, `data-phase="creating"`)
		mustNotContain(t, frag, "<html")
		// And a change after it (its watches are open: it delivered the first).
		c.Status.Phase = managementv1alpha1.PhaseActive
		setStatus(t, c)
		next(t, events, "change", 15*time.Second)
		mustContain(t, b.fragment("/hosted?namespace="+ns), `data-phase="active"`)
	})

	t.Run("cluster page follows the cluster's events", func(t *testing.T) {
		c := must(t, eksCluster(ns, "live"))
		page := b.page("/hosted/" + ns + "/live")
		events := b.stream(ctx, page)
		next(t, events, "ready", 15*time.Second)
		createAll(t, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live-update"},
			InvolvedObject: corev1.ObjectReference{APIVersion: "management.drover.io/v1alpha1", Kind: "Cluster", Namespace: ns, Name: "live", UID: c.UID},
			Type:           corev1.EventTypeNormal, Reason: "UpdateStarted", Message: "Updating the Kubernetes version to 1.34", Source: corev1.EventSource{Component: "test"},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1})
		next(t, events, "change", 15*time.Second)
		mustContain(t, b.fragment("/hosted/"+ns+"/live"), "Updating the Kubernetes version to 1.34")
	})
}

// fragment fetches a page's content region, as the page's script does on "change".
func (b *browser) fragment(path string) string {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("X-Drover-Fragment", "1")
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
	}
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("fragment %s: status %d", path, resp.StatusCode)
	}
	return sb.String()
}

// TestStreamsPerViewerBounded: one sign-in may hold dashboard.MaxStreamsPerViewer event
// streams (each keeps watches open with its identity); one more is refused with 429 until one
// closes.
func TestStreamsPerViewerBounded(t *testing.T) {
	t.Parallel()
	ns := mgmt.Namespace(t)
	createAll(t, eksCluster(ns, "many"))
	b := newBrowser(t, serverDashboard(t))
	b.signIn(namespaceViewer(t, ns, "tabs", ns), ns)
	page := b.page("/hosted?namespace=" + ns)
	var cancels []context.CancelFunc
	for range dashboard.MaxStreamsPerViewer {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		next(t, b.stream(ctx, page), "ready", 30*time.Second)
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	m := watchRE.FindStringSubmatch(page)
	one := func() int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+html.UnescapeString(m[1]), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		resp, err := (&http.Client{Jar: b.c.Jar}).Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := one(); got != http.StatusTooManyRequests {
		t.Fatalf("stream %d of one sign-in: status %d, want 429", dashboard.MaxStreamsPerViewer+1, got)
	}
	cancels[0]()
	envtest.Eventually(t, 10*time.Second, func() error {
		if got := one(); got != http.StatusOK {
			return fmt.Errorf("after one stream closed: status %d, want 200", got)
		}
		return nil
	})
}
