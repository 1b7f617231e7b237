package envtest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clkTck is the kernel's clock tick for /proc's CPU times (USER_HZ, 100 on Linux).
const clkTck = 100

// ProcessCPU reads the CPU seconds (user + system) so far of this process and of the API
// servers and etcds it started, named "test process", "<cluster> kube-apiserver" and
// "<cluster> etcd" after the envtest cluster (by name, its API server's host) whose port the
// process serves, and of other child processes by their command's base name. For benchmarks
// that report where the CPU goes. Linux only; it returns nil elsewhere.
func ProcessCPU(clusters map[string]string) map[string]float64 {
	ports := map[string]string{} // port -> cluster name, for the API servers
	for name, c := range clusters {
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
			name := ports[cmdFlag(args, "--secure-port")]
			if name == "" {
				name = "pid " + strconv.Itoa(pid)
			}
			out[name+" kube-apiserver"] += t
			if u, err := url.Parse(cmdFlag(args, "--etcd-servers")); err == nil {
				etcdOf[u.Port()] = name
			}
		case "etcd":
			etcds = append(etcds, proc{t, args})
		default:
			out[filepath.Base(args[0])] += t
		}
	}
	for _, e := range etcds {
		name := "other"
		for _, l := range strings.Split(cmdFlag(e.args, "--listen-client-urls"), ",") {
			if u, err := url.Parse(l); err == nil && etcdOf[u.Port()] != "" {
				name = etcdOf[u.Port()]
			}
		}
		out[name+" etcd"] += e.cpu
	}
	return out
}

// cmdFlag is the value of --name=value or --name value in args.
func cmdFlag(args []string, name string) string {
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
