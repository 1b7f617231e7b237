package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	_ "sigs.k8s.io/controller-runtime" // registers controller-runtime's metrics, as in drover server
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// grafanaDashboard is the dashboard shipped in the repository (and in charts/drover).
var grafanaDashboard = filepath.Join("..", "..", "config", "grafana", "drover.json")

// TestGrafanaDashboardMetricsExist: every PromQL expression of the Grafana dashboard parses, and
// every metric it reads is served by drover server's registry (a histogram only through its
// _bucket, _sum and _count series) and, for drover's own, documented in docs/metrics.md.
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string         `json:"uid"`
		Title  string         `json:"title"`
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	if dash.UID == "" || dash.Title == "" {
		t.Errorf("dashboard uid %q title %q: both are needed for provisioning", dash.UID, dash.Title)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	served, histograms := registered(t)

	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range flattenPanels(dash.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names, err := promQLMetrics(tg.Expr)
			if err != nil {
				t.Errorf("panel %q: %q: %v", p.Title, tg.Expr, err)
				continue
			}
			if len(names) == 0 {
				t.Errorf("panel %q: %q reads no metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				used[n] = true
			}
		}
	}
	for n := range used {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && histograms[b] {
				base = b
			}
		}
		switch {
		case base == n && histograms[n]:
			t.Errorf("%s is a histogram: query %s_bucket, _sum or _count", n, n)
		case !served[base]:
			t.Errorf("the dashboard reads %s, which drover server does not serve", n)
		case strings.HasPrefix(base, namespace+"_") && !strings.Contains(string(doc), "| `"+base+"` |"):
			t.Errorf("the dashboard reads %s, which docs/metrics.md does not document", base)
		}
	}
	// Every domain metric has a panel.
	for n := range served {
		if strings.HasPrefix(n, namespace+"_") && !slices.ContainsFunc(keys(used), func(u string) bool { return u == n || strings.HasPrefix(u, n+"_") }) {
			t.Errorf("no panel reads %s", n)
		}
	}
}

type grafanaPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

func flattenPanels(ps []grafanaPanel) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flattenPanels(p.Panels)...)
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// registered returns the metric names drover server's registry serves (controller-runtime's
// registry: drover's domain metrics and controller-runtime's own) and those that are histograms.
func registered(t *testing.T) (served, histograms map[string]bool) {
	t.Helper()
	served, histograms = map[string]bool{}, map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	ch := make(chan *prometheus.Desc, 1024)
	go func() {
		ctrlmetrics.Registry.(prometheus.Collector).Describe(ch)
		close(ch)
	}()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			served[m[1]] = true
		}
	}
	for _, c := range all {
		switch c.(type) {
		case *prometheus.HistogramVec, prometheus.Histogram:
			ch := make(chan *prometheus.Desc, 1)
			c.Describe(ch)
			histograms[fqName.FindStringSubmatch((<-ch).String())[1]] = true
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			histograms[f.GetName()] = true
		}
	}
	return served, histograms
}

// promQLKeywords are PromQL words that are not metric names when not followed by "(".
var promQLKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
}

// promQLAggregations are PromQL's aggregation operators, which may be followed by "by (...)"
// or "without (...)" before their "(".
var promQLAggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// promQLLabelLists are the keywords followed by a parenthesised list of label names.
var promQLLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// promQLMetrics returns the metric names a PromQL expression selects: identifiers that are not
// functions or aggregations (followed by "("), keywords, label names (in {} or after by,
// without, on, ignoring, group_left, group_right), durations, numbers, strings or Grafana
// variables ($__rate_interval, ${datasource}). It checks that brackets and quotes balance.
func promQLMetrics(expr string) ([]string, error) {
	var names []string
	var stack []byte
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\n\r", expr[i]) >= 0 {
			i++
		}
		return i
	}
	closer := map[byte]byte{'(': ')', '{': '}', '[': ']'}
	labelList := false // the next "(" opens a label list
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end := i + 1
			for end < len(expr) && expr[end] != c {
				if expr[end] == '\\' && c != '`' {
					end++
				}
				end++
			}
			if end >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			i = end + 1
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				end := strings.IndexByte(expr[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated ${ at %d", i)
				}
				i += end + 1
				continue
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case c == '{' || c == '[' || c == '(' && labelList:
			// Label matchers, ranges and label lists hold no metric names.
			depth, open := 0, c
			end := i
			for ; end < len(expr); end++ {
				if expr[end] == '"' || expr[end] == '\'' || expr[end] == '`' {
					q := expr[end]
					for end++; end < len(expr) && expr[end] != q; end++ {
						if expr[end] == '\\' && q != '`' {
							end++
						}
					}
					continue
				}
				if expr[end] == open {
					depth++
				} else if expr[end] == closer[open] {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if end >= len(expr) {
				return nil, fmt.Errorf("unbalanced %c at %d", c, i)
			}
			labelList = false
			i = end + 1
		case c == '(':
			stack = append(stack, c)
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			stack = stack[:len(stack)-1]
			i++
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unbalanced %c at %d", c, i)
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			switch {
			case promQLLabelLists[strings.ToLower(word)]:
				labelList = next < len(expr) && expr[next] == '('
			case promQLKeywords[strings.ToLower(word)], promQLAggregations[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// A function or an aggregation.
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("%d unclosed (", len(stack))
	}
	return names, nil
}

func TestPromQLMetrics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string
		bad  bool
	}{
		{expr: `up`, want: []string{"up"}},
		{expr: `max by (provider, phase) (drover_hosted_clusters)`, want: []string{"drover_hosted_clusters"}},
		{expr: `sum(rate(a_total{code="429", op=~"Get.*"}[$__rate_interval])) by (provider) / on (x) group_left (y) b`, want: []string{"a_total", "b"}},
		{expr: `histogram_quantile(0.95, sum by (le) (rate(h_bucket[5m] offset 1h)))`, want: []string{"h_bucket"}},
		{expr: `sum without (instance) (g{l="{not_a_metric}"}) > bool 0 or vector(0)`, want: []string{"g"}},
		{expr: `topk(10, x) and ${datasource_var} unless y`, want: []string{"x", "y"}},
		{expr: `sum(rate(x[5m])`, bad: true},
		{expr: `x{a="b"`, bad: true},
		{expr: `x{a="b}`, bad: true},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := promQLMetrics(tc.expr)
			if tc.bad {
				if err == nil {
					t.Fatalf("no error, metrics %v", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
