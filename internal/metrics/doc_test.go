package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestEveryMetricIsDocumented: docs/metrics.md has a row for every domain metric.
func TestEveryMetricIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	if len(all) < 12 {
		t.Fatalf("%d metrics registered", len(all))
	}
	for _, c := range all {
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := name.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			if !strings.Contains(string(doc), "| `"+m[1]+"` |") {
				t.Errorf("docs/metrics.md has no row for %s", m[1])
			}
		}
	}
}
