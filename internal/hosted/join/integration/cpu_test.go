package integration

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/droverhq/drover/test/envtest"
)

// clkTck is the kernel's clock tick for /proc's CPU times (USER_HZ, 100 on Linux).
const clkTck = 100

// cpuTimes reads the CPU seconds (user + system) so far of this process and of the API
// servers and etcds it started, named "test process", "<cluster> kube-apiserver" and
// "<cluster> etcd" after the envtest cluster whose port the process serves. Linux only; it
// returns nil elsewhere.
func cpuTimes() map[string]float64 {
	ports := map[string]string{} // port -> cluster name, for the API servers
	for name, c := range map[string]string{"management": mgmt.Config.Host, "downstream": downstream.Config.Host} {
		if !strings.Contains(c, "://") {
			c = "https://" + c
		}
		if u, err := url.Parse(c); err == nil {
			ports[u.Port()] = name
		}
	}
	out := map[string]float64{}
	self := os.Getpid()
	if t, ok := procCPU(self); ok {
		out["test process"] = t
	} else {
		return nil
	}
	etcdOf := map[string]string{} // etcd client port -> cluster name
	type proc struct {
		cpu  float64
		args []string
	}
	var etcds []proc
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || parentOf(pid) != self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		t, ok := procCPU(pid)
		if !ok || len(args) == 0 {
			continue
		}
		switch filepath.Base(args[0]) {
		case "kube-apiserver":
			name := ports[flag(args, "--secure-port")]
			if name == "" {
				name = "pid " + strconv.Itoa(pid)
			}
			out[name+" kube-apiserver"] += t
			if u, err := url.Parse(flag(args, "--etcd-servers")); err == nil {
				etcdOf[u.Port()] = name
			}
		case "etcd":
			etcds = append(etcds, proc{t, args})
		}
	}
	for _, e := range etcds {
		name := "other"
		for _, l := range strings.Split(flag(e.args, "--listen-client-urls"), ",") {
			if u, err := url.Parse(l); err == nil && etcdOf[u.Port()] != "" {
				name = etcdOf[u.Port()]
			}
		}
		out[name+" etcd"] += e.cpu
	}
	return out
}

// flag is the value of --name=value or --name value in args.
func flag(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// statFields are the fields of /proc/PID/stat after the command name.
func statFields(pid int) []string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// procCPU is pid's user + system CPU seconds (fields 14 and 15 of /proc/PID/stat).
func procCPU(pid int) (float64, bool) {
	f := statFields(pid)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (u + s) / clkTck, true
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
