package integration

import (
	"cmp"
	"context"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/droverhq/drover/test/envtest"
)

// cpuTimes reads the CPU seconds so far of this process and of the API servers and etcds it
// started (envtest.ProcessCPU).
func cpuTimes() map[string]float64 {
	return envtest.ProcessCPU(map[string]string{"management": mgmt.Config.Host, "downstream": downstream.Config.Host})
}

// logCPU logs the CPU milliseconds per cluster each process spent since before, and the load
// average, and reports the total as a metric.
func logCPU(b *testing.B, before map[string]float64, n int) {
	after := cpuTimes()
	if after == nil {
		return
	}
	total := 0.0
	for _, k := range slices.Sorted(maps.Keys(after)) {
		d := after[k] - before[k]
		total += d
		b.Logf("CPU %s: %.0f ms per cluster (%.1f s)", k, d*1000/float64(n), d)
	}
	b.Logf("load average at the end: %s", loadAverage())
	b.ReportMetric(total*1000/float64(n), "cpu-ms/cluster")
}

// requestCounts reads each API server's apiserver_request_total by verb and resource (its
// /metrics, as the test's admin), to say what the controllers ask of it per cluster.
func requestCounts(b *testing.B) map[string]float64 {
	out := map[string]float64{}
	for name, c := range map[string]*envtest.Cluster{"management": mgmt, "downstream": downstream} {
		rc, err := rest.RESTClientFor(withNegotiatedSerializer(c.Config))
		if err != nil {
			b.Fatal(err)
		}
		raw, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			b.Logf("%s metrics: %v", name, err)
			continue
		}
		for line := range strings.SplitSeq(string(raw), "\n") {
			rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
			if !ok {
				continue
			}
			labels, value, ok := strings.Cut(rest, "} ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				continue
			}
			l := map[string]string{}
			for kv := range strings.SplitSeq(labels, ",") {
				if k, val, ok := strings.Cut(kv, "="); ok {
					l[k] = strings.Trim(val, `"`)
				}
			}
			res := l["resource"]
			if l["subresource"] != "" {
				res += "/" + l["subresource"]
			}
			out[name+" "+l["verb"]+" "+res] += v
		}
	}
	return out
}

// logRequests logs the requests per cluster each API server served since before, by verb
// and resource, the most frequent first (those above 0.5 per cluster).
func logRequests(b *testing.B, before map[string]float64, n int) {
	after := requestCounts(b)
	type kv struct {
		k string
		v float64
	}
	var all []kv
	totals := map[string]float64{}
	for k, v := range after {
		d := (v - before[k]) / float64(n)
		server, _, _ := strings.Cut(k, " ")
		totals[server] += d
		if d >= 0.5 {
			all = append(all, kv{k, d})
		}
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Compare(b.v, a.v) })
	for _, s := range slices.Sorted(maps.Keys(totals)) {
		b.Logf("requests to the %s API server: %.1f per cluster", s, totals[s])
	}
	for _, x := range all {
		b.Logf("requests %s: %.2f per cluster", x.k, x.v)
	}
}

// loadAverage is the 1, 5 and 15 min load averages ("" when unknown).
func loadAverage() string {
	la, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(la))
	return strings.Join(f[:min(3, len(f))], " ")
}
