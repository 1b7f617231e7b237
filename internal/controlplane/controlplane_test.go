package controlplane

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The versions the code checks must be the versions hack/kube-bins builds.
func TestPinnedVersionsMatchToolsModule(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "hack", "kube-bins", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ re, want string }{
		{`(?m)^\s*k8s.io/kubernetes (v\S+)`, KubernetesVersion},
		{`(?m)^\s*go.etcd.io/etcd/server/v3 v(\S+)`, EtcdVersion},
	} {
		m := regexp.MustCompile(tc.re).FindSubmatch(data)
		if m == nil || string(m[1]) != tc.want {
			t.Errorf("hack/kube-bins/go.mod pins %q (by %s), code expects %q", m, tc.re, tc.want)
		}
	}
}

func TestCheckBinaries(t *testing.T) {
	dir := t.TempDir()
	write := func(name, script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("etcd", "#!/bin/sh\necho 'etcd Version: "+EtcdVersion+"'\n")
	write("kube-apiserver", "#!/bin/sh\necho 'Kubernetes v1.29.0'\n")
	if err := os.WriteFile(filepath.Join(dir, "kwok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		bins []string
		want string // substring of the error; empty means success
	}{
		{"right version", []string{"etcd"}, ""},
		{"wrong version", []string{"kube-apiserver"}, `"Kubernetes v1.29.0", drover needs "Kubernetes ` + KubernetesVersion},
		{"missing", []string{"kube-scheduler"}, "kube-scheduler not found"},
		{"not executable", []string{"kwok"}, "not an executable file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBinaries(context.Background(), dir, tt.bins...)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "make tools") {
				t.Fatalf("got %v, want an error containing %q and the fix", err, tt.want)
			}
		})
	}
}

func TestPKIIsReusedAcrossRestarts(t *testing.T) {
	t.Parallel()
	p := pki{dir: t.TempDir()}
	if _, err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	files := append([]string{"ca", "sa"}, leafNames...)
	before := map[string]string{}
	for _, f := range files {
		for _, ext := range []string{".crt", ".key"} {
			data, _ := os.ReadFile(p.path(f + ext))
			before[f+ext] = string(data)
		}
	}
	renewed, err := p.ensure()
	if err != nil || len(renewed) != 0 {
		t.Fatalf("second ensure renewed %v, err %v", renewed, err)
	}
	for name, data := range before {
		if after, _ := os.ReadFile(p.path(name)); string(after) != data {
			t.Errorf("%s rewritten on the second start; kubeconfigs handed out would break", name)
		}
	}
	st, err := os.Stat(p.path("ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode %v, want 0600", st.Mode().Perm())
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: not PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var leafNames = []string{"admin", "apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// verifyLeaves checks that every leaf verifies against each given CA file.
func verifyLeaves(t *testing.T, p pki, caFiles ...string) {
	t.Helper()
	for _, caFile := range caFiles {
		pool := x509.NewCertPool()
		pool.AddCert(readCert(t, caFile))
		for _, name := range leafNames {
			_, err := readCert(t, p.path(name+".crt")).Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
			if err != nil {
				t.Errorf("%s does not verify against %s: %v", name, caFile, err)
			}
		}
	}
}

func TestPKIRenewal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// first issues the PKI; then break changes it before the second ensure with default lifetimes.
		first     pki
		breakIt   func(t *testing.T, p pki)
		renewed   []string
		caRenewed bool // same key, new certificate
	}{
		{name: "leaves close to expiry", first: pki{leafValidity: 10 * time.Minute}, renewed: leafNames},
		{name: "CA close to expiry", first: pki{caValidity: 10 * time.Minute}, renewed: append([]string{"ca"}, leafNames...), caRenewed: true},
		{
			name: "CA replaced", renewed: leafNames,
			breakIt: func(t *testing.T, p pki) {
				for _, f := range []string{"ca.crt", "ca.key"} {
					if err := os.Remove(p.path(f)); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
		{
			name: "key does not match", renewed: []string{"admin"},
			breakIt: func(t *testing.T, p pki) {
				data, err := os.ReadFile(p.path("kwok.key"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p.path("admin.key"), data, 0o600); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.first
			p.dir = t.TempDir()
			if renewed, err := p.ensure(); err != nil || len(renewed) != 0 {
				t.Fatalf("first ensure: renewed %v, err %v", renewed, err)
			}
			if tt.breakIt != nil {
				tt.breakIt(t, p)
			}
			oldCA, err := os.ReadFile(p.path("ca.crt"))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			before := map[string]*x509.Certificate{}
			for _, name := range leafNames {
				before[name] = readCert(t, p.path(name+".crt"))
			}
			var oldCAKey crypto.PublicKey
			if len(oldCA) > 0 {
				oldCAKey = readCert(t, p.path("ca.crt")).PublicKey
			}

			p = pki{dir: p.dir}
			renewed, err := p.ensure()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(renewed, tt.renewed) {
				t.Fatalf("renewed %v, want %v", renewed, tt.renewed)
			}
			for _, name := range leafNames {
				after := readCert(t, p.path(name+".crt"))
				if changed := after.SerialNumber.Cmp(before[name].SerialNumber) != 0; changed != slices.Contains(tt.renewed, name) {
					t.Errorf("%s reissued: %v, want %v", name, changed, !changed)
				}
				if slices.Contains(tt.renewed, name) && time.Until(after.NotAfter) < defaultLeafValidity-time.Hour {
					t.Errorf("%s renewed until %s, want a full lifetime", name, after.NotAfter)
				}
			}
			ca := readCert(t, p.path("ca.crt"))
			verifyLeaves(t, p, p.path("ca.crt"))
			if tt.caRenewed {
				if time.Until(ca.NotAfter) < defaultCAValidity-time.Hour {
					t.Errorf("CA renewed until %s, want a full lifetime", ca.NotAfter)
				}
				if !ca.PublicKey.(*ecdsa.PublicKey).Equal(oldCAKey) {
					t.Error("CA renewal changed the CA key: trust bundles handed out earlier break")
				}
				// Trust bundles handed out before still verify the renewed certificates.
				old := filepath.Join(t.TempDir(), "old-ca.crt")
				if err := os.WriteFile(old, oldCA, 0o600); err != nil {
					t.Fatal(err)
				}
				verifyLeaves(t, p, old)
			}
			if _, err := tls.LoadX509KeyPair(p.path("admin.crt"), p.path("admin.key")); err != nil {
				t.Fatalf("admin certificate and key: %v", err)
			}
		})
	}
}

func testBinDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("DROVER_KUBE_BIN_DIR"), filepath.Join("..", "..", "bin", "k8s")} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "kube-apiserver")); err == nil {
			return d
		}
	}
	t.Fatal("kube-apiserver not found in $KUBEBUILDER_ASSETS, $DROVER_KUBE_BIN_DIR or bin/k8s: run `make tools` first (or use `make test`)")
	return ""
}

// servedCert is the certificate the API server presents, verified against caFile.
func servedCert(t *testing.T, cp *ControlPlane, caFile string) *x509.Certificate {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, caFile))
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", cp.apiPort), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS connection to the API server: %v", err)
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0]
}

// A control plane restarted with certificates close to expiry serves renewed ones; the renewed
// admin kubeconfig and one handed out before the renewal (same CA) both work. A restart with
// valid certificates rewrites nothing.
func TestStartRenewsCertificatesCloseToExpiry(t *testing.T) {
	t.Parallel()
	binDir, dir := testBinDir(t), t.TempDir()
	start := func(leafValidity time.Duration) *ControlPlane {
		t.Helper()
		cp, err := Start(t.Context(), Options{BinDir: binDir, DataDir: dir, UnsafeNoFsync: true, leafValidity: leafValidity})
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	canList := func(what string, cfg *rest.Config) {
		t.Helper()
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	cp := start(10 * time.Minute)
	caFile := cp.CAFile()
	short := servedCert(t, cp, caFile)
	oldKubeconfig, err := os.ReadFile(cp.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	oldCA, _ := os.ReadFile(caFile)
	cp.Stop()

	cp = start(0)
	renewed := servedCert(t, cp, caFile)
	if got := cp.RenewedCertificates(); !slices.Equal(got, leafNames) {
		t.Errorf("renewed %v, want %v", got, leafNames)
	}
	if !renewed.NotAfter.After(short.NotAfter.Add(defaultLeafValidity/2)) || renewed.SerialNumber.Cmp(short.SerialNumber) == 0 {
		t.Errorf("served certificate expires %s (serial %s), before the restart %s (serial %s): not renewed", renewed.NotAfter, renewed.SerialNumber, short.NotAfter, short.SerialNumber)
	}
	if ca, _ := os.ReadFile(caFile); string(ca) != string(oldCA) {
		t.Error("the CA changed although it was valid")
	}
	canList("renewed admin kubeconfig", cp.RESTConfig())
	old, err := clientcmd.RESTConfigFromKubeConfig(oldKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	canList("kubeconfig handed out before the renewal", old)
	cp.Stop()

	cp = start(0)
	defer cp.Stop()
	if got := cp.RenewedCertificates(); len(got) != 0 {
		t.Errorf("valid certificates renewed: %v", got)
	}
	if again := servedCert(t, cp, caFile); again.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		t.Error("a valid serving certificate was reissued")
	}
	canList("admin kubeconfig", cp.RESTConfig())
}

// hostIP is a non-loopback IPv4 address of this machine ("" if it has none).
func hostIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// TestAdvertiseAddress: with an advertise address, the API server answers there (TLS verified
// against the cluster CA, so its certificate names the address) and AdvertisedURL says so; a data
// dir started before without it gets its serving certificate re-issued. A loopback address is
// refused, naming what to give instead.
func TestAdvertiseAddress(t *testing.T) {
	t.Parallel()
	ip := hostIP()
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address to advertise")
	}
	binDir, dir := testBinDir(t), t.TempDir()
	if _, err := Start(t.Context(), Options{BinDir: binDir, DataDir: dir, AdvertiseAddress: "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Fatalf("loopback advertise address: %v, want a refusal", err)
	}
	p := pki{dir: filepath.Join(dir, "pki")}
	if _, err := p.ensure(); err != nil { // a data dir from a start without the address
		t.Fatal(err)
	}
	cp, err := Start(t.Context(), Options{BinDir: binDir, DataDir: dir, UnsafeNoFsync: true, AdvertiseAddress: ip})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	if got := cp.RenewedCertificates(); !slices.Contains(got, "apiserver") {
		t.Errorf("renewed %v, want the apiserver certificate re-issued for %s", got, ip)
	}
	want := "https://" + net.JoinHostPort(ip, strconv.Itoa(cp.apiPort))
	if cp.AdvertisedURL() != want {
		t.Errorf("AdvertisedURL() = %s, want %s", cp.AdvertisedURL(), want)
	}
	cfg := rest.CopyConfig(cp.RESTConfig())
	cfg.Host = cp.AdvertisedURL()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the API server at its advertised address %s: %v", cfg.Host, err)
	}
}

// Another process taking kwok's port between drover choosing and kwok binding it made kwok exit
// unnoticed, and fake Nodes then never became Ready (a CI failure). Start now waits for kwok and
// starts again on new ports.
func TestStartSurvivesKwokPortTaken(t *testing.T) {
	t.Parallel()
	binDir := testBinDir(t)
	var taken net.Listener
	attempts := 0
	cp, err := Start(t.Context(), Options{
		BinDir: binDir, DataDir: t.TempDir(), UnsafeNoFsync: true, Kwok: true,
		portsChosen: func(p ports) {
			attempts++
			if attempts > 1 {
				return
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.Kwok))
			if err != nil {
				t.Errorf("take kwok's port: %v", err)
				return
			}
			taken = l
		},
	})
	if taken != nil {
		defer func() { _ = taken.Close() }()
	}
	if err != nil {
		t.Fatalf("Start with kwok's port taken once: %v", err)
	}
	defer cp.Stop()
	if attempts != 2 {
		t.Errorf("start attempts: %d, want 2 (the first lost kwok's port)", attempts)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", mustPorts(t, cp).Kwok))
	if err != nil {
		t.Fatalf("kwok not serving after Start: %v", err)
	}
	_ = resp.Body.Close()
}

func mustPorts(t *testing.T, cp *ControlPlane) ports {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cp.opts.DataDir, "ports.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p ports
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
