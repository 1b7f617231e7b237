package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

// droverServer is a running `drover server` process.
type droverServer struct {
	cmd     *exec.Cmd
	out     *envtest.SyncBuffer
	dataDir string
	extra   []string
	health  string
	done    chan error
	// starts counts the process's starts; from is where the current one's output begins.
	starts, from int
}

// bindRetries is how often a server whose address was taken between freeAddr and its bind
// (by one of the embedded control plane's own processes, or another test) is started again.
const bindRetries = 3

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func startServer(t testing.TB, dataDir string, extra ...string) *droverServer {
	t.Helper()
	s := &droverServer{out: &envtest.SyncBuffer{}, dataDir: dataDir, extra: extra}
	s.start(t)
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	return s
}

// start starts the process, on addresses free now.
func (s *droverServer) start(t testing.TB) {
	t.Helper()
	s.health, s.done, s.from = freeAddr(t), make(chan error, 1), len(s.out.String())
	args := append([]string{"server", "--data-dir", s.dataDir, "--bin-dir", binDir, "--apiserver-port", "0",
		"--metrics-bind-address", freeAddr(t), "--health-probe-bind-address", s.health}, s.extra...)
	cmd := exec.Command(droverBin, args...)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	s.starts++
	done := s.done
	go func() { done <- cmd.Wait() }()
}

func (s *droverServer) waitReady(t testing.TB) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		select {
		case err := <-s.done:
			if out := s.out.String()[s.from:]; strings.Contains(out, "address already in use") && s.starts < bindRetries {
				t.Logf("drover server could not bind an address freeAddr chose (taken since); starting it again:\n%s", out)
				s.start(t)
				return fmt.Errorf("started again after %w", err)
			}
			t.Fatalf("drover server exited (%v):\n%s", err, s.out)
		default:
		}
		resp, err := http.Get("http://" + s.health + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
}

// interrupt sends Ctrl-C and waits for a clean exit.
func (s *droverServer) interrupt(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("drover server exited with %v after Ctrl-C:\n%s", err, s.out)
		}
		// A clean stop releases the leader Lease; that is no error to show a user.
		if out := s.out.String(); strings.Contains(out, "stop sequence was engaged") || strings.Contains(out, "goroutine ") {
			t.Errorf("drover server logged an error on a clean Ctrl-C:\n%s", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("drover server still running 60s after Ctrl-C:\n%s", s.out)
	}
}

// processesUsing lists the PIDs whose command line mentions dir.
func processesUsing(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestEmbeddedServerStartsPersistsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()

	s := startServer(t, dataDir)
	s.waitReady(t)
	if n := len(processesUsing(dataDir)); n < 4 { // drover, etcd, kube-apiserver, kube-controller-manager
		t.Fatalf("%d processes use the data dir, want drover + etcd + kube-apiserver + kube-controller-manager", n)
	}

	// The admin kubeconfig works with the kubectl built by `make tools`.
	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	out, err := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "namespace/"+server.SystemNamespace) {
		t.Fatalf("kubectl get namespaces: %v\n%s", err, out)
	}

	c := kubeClient(t, kubeconfig)
	ctx := t.Context()
	// The embedded control plane published its own endpoint for agents.
	reg := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: config.DefaultNamespace, Name: config.DefaultName}, reg); err != nil {
		t.Fatalf("registration ConfigMap: %v", err)
	}
	if kc, err := clientcmd.LoadFromFile(kubeconfig); err != nil {
		t.Fatal(err)
	} else if cl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]; reg.Data[config.KeyAPIServerURL] != cl.Server ||
		reg.Data[config.KeyAPIServerCA] != string(cl.CertificateAuthorityData) {
		t.Errorf("registration ConfigMap %v, want the embedded API server's URL %s and CA", reg.Data, cl.Server)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survives-restart"}, Data: map[string]string{"k": "v"}}
	hc := &managementv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "prod"},
		Spec: managementv1alpha1.ClusterSpec{EKSConfig: &managementv1alpha1.EKSClusterConfig{
			DisplayName: "prod", Region: "eu-west-1", CredentialSecret: "aws", KubernetesVersion: ptr.To("1.33"),
		}},
	}
	for _, o := range []client.Object{cm, hc} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T (are drover's CRDs installed?): %v", o, err)
		}
	}

	s.interrupt(t)
	if pids := processesUsing(dataDir); len(pids) > 0 {
		t.Fatalf("processes %v still use the data dir after Ctrl-C", pids)
	}

	s2 := startServer(t, dataDir)
	s2.waitReady(t)
	c = kubeClient(t, kubeconfig)
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap after restart: %v", err)
	}
	got := &managementv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(hc), got); err != nil || got.Spec.EKSConfig.Region != "eu-west-1" {
		t.Errorf("Cluster after restart: %v %+v", err, got.Spec.EKSConfig)
	}
	s2.interrupt(t)
	if pids := processesUsing(dataDir); len(pids) > 0 {
		t.Fatalf("processes %v still use the data dir after Ctrl-C", pids)
	}
}

func kubeClient(t testing.TB, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: server.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServerBadInputStopsWithOneClearLine(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()

	aFile := filepath.Join(tmp, "a-file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() })
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	// A bin dir whose kube-apiserver is the wrong version.
	wrongBins := filepath.Join(tmp, "wrong-bins")
	if err := os.MkdirAll(wrongBins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(binDir, "etcd"), filepath.Join(wrongBins, "etcd")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wrongBins, "kube-apiserver"), []byte("#!/bin/sh\necho Kubernetes v1.30.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	unreachable := filepath.Join(tmp, "unreachable.kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://%s\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: x\n", freeAddr(t))
	if err := os.WriteFile(unreachable, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}

	// A cluster without drover's CRDs, for --install-crds=false.
	bare, err := envtest.Start("no-crds", envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop() })
	bareKubeconfig := writeKubeconfig(t, bare.Config, filepath.Join(tmp, "bare.kubeconfig"))

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"CRDs missing with --install-crds=false", []string{"--kubeconfig", bareKubeconfig, "--install-crds=false", "--leader-elect=false"},
			[]string{"--install-crds=false", "clusters.management.drover.io", "installCRDs=true"}},
		{"data dir not writable", []string{"--data-dir", filepath.Join(aFile, "data")}, []string{"data dir", "--data-dir"}},
		{"apiserver port in use", []string{"--apiserver-port", busyPort}, []string{"port " + busyPort, "in use", "--apiserver-port"}},
		{"health port in use", []string{"--health-probe-bind-address", "127.0.0.1:" + busyPort}, []string{"--health-probe-bind-address", "cannot listen"}},
		{"binaries missing", []string{"--bin-dir", filepath.Join(tmp, "empty")}, []string{"not found", "make tools"}},
		{"wrong binary version", []string{"--bin-dir", wrongBins}, []string{"v1.30.0", "v1.37.2", "make tools"}},
		{"unreachable kubeconfig", []string{"--kubeconfig", unreachable}, []string{"cannot reach", unreachable}},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(tmp, "nope")}, []string{"--kubeconfig", "not found"}},
		{"CA file without a certificate", []string{"--api-server-ca", aFile}, []string{"--api-server-ca", "no PEM certificate"}},
		{"loopback advertise address", []string{"--advertise-address", "127.0.0.1"}, []string{"advertise address", "not a loopback"}},
		{"advertise address on an existing cluster", []string{"--kubeconfig", bareKubeconfig, "--advertise-address", "192.0.2.10"},
			[]string{"--advertise-address", "embedded control plane only", "--api-server-url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"server", "--data-dir", filepath.Join(t.TempDir(), "data"), "--bin-dir", binDir, "--apiserver-port", "0",
				"--metrics-bind-address", "0", "--health-probe-bind-address", freeAddr(t)}
			args = append(args, tt.args...) // later flags win
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, droverBin, args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatal("drover server exited 0, want an error")
			}
			msg := strings.TrimSpace(stderr.String())
			if lines := strings.Split(msg, "\n"); len(lines) != 1 || !strings.HasPrefix(msg, "Error: ") {
				t.Fatalf("want exactly one 'Error: ' line on stderr, got:\n%s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

// BenchmarkEmbeddedServerReady measures `drover server` (embedded mode, fresh data dir) from
// process start to /readyz OK.
func BenchmarkEmbeddedServerReady(b *testing.B) {
	for b.Loop() {
		start := time.Now()
		s := startServer(b, b.TempDir())
		s.waitReady(b)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-ready")
		s.interrupt(b)
	}
}

// TestEmbeddedServerAdvertiseAddress: with --advertise-address, agents are given the embedded API
// server at that address (registration ConfigMap), where it answers with a certificate the
// published CA verifies.
func TestEmbeddedServerAdvertiseAddress(t *testing.T) {
	t.Parallel()
	var ip string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP.String()
			break
		}
	}
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address to advertise")
	}
	dataDir := t.TempDir()
	s := startServer(t, dataDir, "--advertise-address", ip)
	s.waitReady(t)
	c := kubeClient(t, filepath.Join(dataDir, "kubeconfig"))
	reg := &corev1.ConfigMap{}
	eventually(t, 30*time.Second, func() error {
		return c.Get(t.Context(), client.ObjectKey{Namespace: config.DefaultNamespace, Name: config.DefaultName}, reg)
	})
	u := reg.Data[config.KeyAPIServerURL]
	if !strings.HasPrefix(u, "https://"+ip+":") {
		t.Fatalf("agents register at %q, want the advertise address %s", u, ip)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(reg.Data[config.KeyAPIServerCA])) {
		t.Fatal("the registration ConfigMap has no CA")
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(u, "https://"), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS to the advertised API server %s: %v", u, err)
	}
	_ = conn.Close()
	s.interrupt(t)
}
