package metrics

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// alertRules is drover's Prometheus rule file (rendered by charts/drover as a PrometheusRule).
var alertRules = filepath.Join("..", "..", "config", "prometheus", "drover-alerts.yaml")

// ruleFile is a Prometheus rule file's alerting part.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// scraped are series Prometheus makes itself for every target, not served by drover.
var scraped = map[string]bool{"up": true}

var (
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|=)\s*"([^"]*)"`)
)

// TestPrometheusAlerts: every alert of config/prometheus/drover-alerts.yaml reads only metrics
// drover server serves (or Prometheus' own up), with label values docs/metrics.md documents for
// that metric — an alert on a value the metric never takes would never fire — and has a
// severity, a summary, a description, a runbook in docs/ and a row in docs/metrics.md#alerts.
func TestPrometheusAlerts(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	var file ruleFile
	if err := yaml.UnmarshalStrict(b, &file); err != nil {
		t.Fatalf("%s: %v", alertRules, err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	served, histograms := registered(t)
	seen := map[string]bool{}
	for _, g := range file.Groups {
		if len(g.Rules) == 0 {
			t.Errorf("group %q has no rules", g.Name)
		}
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				if !strings.HasPrefix(r.Alert, "Drover") || seen[r.Alert] {
					t.Errorf("alert %q: names start with Drover and are unique", r.Alert)
				}
				seen[r.Alert] = true
				switch r.Labels["severity"] {
				case "critical", "warning", "info":
				default:
					t.Errorf("severity %q, want critical, warning or info", r.Labels["severity"])
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("no %s annotation", a)
					}
				}
				if u, err := url.Parse(r.Annotations["runbook_url"]); err != nil || !strings.Contains(u.Path, "/blob/main/docs/") {
					t.Errorf("runbook_url %q does not point into docs/", r.Annotations["runbook_url"])
				} else if _, err := os.Stat(filepath.Join("..", "..", "docs", filepath.Base(u.Path))); err != nil {
					t.Errorf("runbook_url %q: %v", r.Annotations["runbook_url"], err)
				}
				if r.For != "" {
					if _, err := time.ParseDuration(r.For); err != nil {
						t.Errorf("for %q: %v", r.For, err)
					}
				}
				if !strings.Contains(string(doc), "| `"+r.Alert+"` |") {
					t.Errorf("docs/metrics.md#alerts has no row for %s", r.Alert)
				}
				checkAlertExpr(t, r.Expr, string(doc), served, histograms)
			})
		}
	}
	if len(seen) == 0 {
		t.Fatalf("%s has no alerts", alertRules)
	}
}

func checkAlertExpr(t *testing.T, expr, doc string, served, histograms map[string]bool) {
	t.Helper()
	names, err := promQLMetrics(expr)
	if err != nil || len(names) == 0 {
		t.Fatalf("expr %q: %v (metrics read: %v)", expr, err, names)
	}
	for _, n := range names {
		if !served[n] && !scraped[n] && !histograms[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] {
			t.Errorf("expr reads %s, which drover server does not serve", n)
		}
	}
	for _, sel := range selectorRE.FindAllStringSubmatch(expr, -1) {
		metric := sel[1]
		if !strings.HasPrefix(metric, namespace+"_") {
			continue
		}
		row := docRow(doc, metric)
		if row == "" {
			t.Errorf("docs/metrics.md does not document %s", metric)
			continue
		}
		for _, m := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			label, op, value := m[1], m[2], m[3]
			if !strings.Contains(row, "`"+label+"`") {
				t.Errorf("%s has no label %s (docs/metrics.md: %s)", metric, label, row)
			}
			values := []string{value}
			if op == "=~" {
				values = strings.Split(value, "|")
			}
			for _, v := range values {
				if strings.ContainsAny(v, `.*+?()[]{}^$\`) {
					continue // a pattern, not a value
				}
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(row) {
					t.Errorf("%s{%s%s%q}: docs/metrics.md gives %s no value %q: %s", metric, label, op, value, label, v, row)
				}
			}
		}
	}
}

// docRow is the docs/metrics.md table row of metric.
func docRow(doc, metric string) string {
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| `"+metric+"` |") {
			return line
		}
	}
	return ""
}
