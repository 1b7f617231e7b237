// Package controlplane runs a local Kubernetes control plane — etcd, kube-apiserver and
// optionally kube-controller-manager, kube-scheduler and kwok — as child processes of drover.
//
// It backs two things: `drover server` with no cluster given (the embedded mode), and the "full"
// clusters of drover's end-to-end tests. State lives under a data dir and survives restarts.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Pinned versions of the binaries built by hack/kube-bins. A test keeps them in step with
// hack/kube-bins/go.mod.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "3.7.3"
)

// Options configures a control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
	BinDir string
	// DataDir holds etcd's data, the PKI, logs and the admin kubeconfig.
	DataDir string
	// APIServerPort is the kube-apiserver's secure port on 127.0.0.1. 0 picks a free port (and
	// reuses it on a restart with the same data dir while it is free).
	APIServerPort int
	// ControllerManager also runs kube-controller-manager (namespace deletion, garbage
	// collection, ServiceAccounts, Deployments, ...).
	ControllerManager bool
	// Scheduler also runs kube-scheduler.
	Scheduler bool
	// Kwok also runs kwok, which makes Nodes annotated kwok.x-k8s.io/node=fake Ready and runs
	// the pods scheduled to them (status only).
	Kwok bool
	// UnsafeNoFsync makes etcd skip fsync: faster, and only for tests.
	UnsafeNoFsync bool
	// StartTimeout bounds the wait for /readyz; default 60s.
	StartTimeout time.Duration
	// APIServerArgs are extra kube-apiserver flags ("--name=value"), e.g. a token
	// authentication webhook standing in for a cloud provider's.
	APIServerArgs []string
	// AdvertiseAddress, when set, is an IP address of this machine other clusters reach it at:
	// the kube-apiserver then also listens there (on every interface), its serving certificate
	// names it, and AdvertisedURL uses it, so that agents elsewhere can register. Default: the
	// API server listens on 127.0.0.1 only.
	AdvertiseAddress string

	// leafValidity and caValidity override the lifetime of certificates issued by this start
	// (tests of the renewal).
	leafValidity, caValidity time.Duration
	// portsChosen runs after each start attempt chose its ports (tests take one of them).
	portsChosen func(ports)
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	opts       Options
	pki        pki
	procs      []*process
	apiPort    int
	restConfig *rest.Config
	exited     chan error
	renewed    []string
}

type ports struct {
	APIServer  int `json:"apiServer"`
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
	Kwok       int `json:"kwok"`
}

// Start checks the inputs, starts the processes and waits until the API server is ready.
// On error nothing is left running.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if err := checkDataDir(opts.DataDir); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %q: %w", opts.DataDir, err)
	}
	opts.DataDir = dataDir
	if err := CheckBinaries(ctx, opts.BinDir, opts.binaries()...); err != nil {
		return nil, err
	}
	// A free port can be taken by another process between choosing it and binding it: start
	// again on new ports (those drover chose itself) rather than fail.
	for attempt := 1; ; attempt++ {
		cp, err := start(ctx, opts, dataDir)
		if err == nil || attempt == 3 || opts.APIServerPort != 0 || !strings.Contains(err.Error(), "address already in use") {
			return cp, err
		}
	}
}

func start(ctx context.Context, opts Options, dataDir string) (*ControlPlane, error) {
	p, err := choosePorts(opts)
	if err != nil {
		return nil, err
	}
	if opts.portsChosen != nil {
		opts.portsChosen(p)
	}
	cp := &ControlPlane{opts: opts, apiPort: p.APIServer, exited: make(chan error, 1),
		pki: pki{dir: filepath.Join(dataDir, "pki"), leafValidity: opts.leafValidity, caValidity: opts.caValidity}}
	if a := opts.AdvertiseAddress; a != "" {
		ip := net.ParseIP(a)
		if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
			return nil, fmt.Errorf("advertise address %q: give an IP address of this machine that other clusters reach (not a loopback or unspecified one)", a)
		}
		cp.pki.apiServerIPs = []net.IP{ip}
	}
	if cp.renewed, err = cp.pki.ensure(); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	if err := cp.writeKubeconfigs(); err != nil {
		return nil, err
	}
	logDir := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	if err := cp.startAll(ctx, p, logDir); err != nil {
		cp.Stop()
		return nil, err
	}
	go cp.watch()
	return cp, nil
}

func (o Options) binaries() []string {
	bins := []string{"etcd", "kube-apiserver"}
	if o.ControllerManager {
		bins = append(bins, "kube-controller-manager")
	}
	if o.Scheduler {
		bins = append(bins, "kube-scheduler")
	}
	if o.Kwok {
		bins = append(bins, "kwok", "kwok-stages.yaml")
	}
	return bins
}

func (cp *ControlPlane) startAll(ctx context.Context, p ports, logDir string) error {
	o := cp.opts
	bin := func(name string) string { return filepath.Join(o.BinDir, name) }
	pk := cp.pki.path
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", p.EtcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", p.EtcdPeer)
	etcdArgs := []string{
		"--name=drover", "--data-dir=" + filepath.Join(o.DataDir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=drover=" + peerURL, "--log-level=warn",
	}
	if o.UnsafeNoFsync {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}
	if err := cp.start("etcd", bin("etcd"), logDir, etcdArgs); err != nil {
		return err
	}
	bind, advertise := "127.0.0.1", "127.0.0.1"
	if o.AdvertiseAddress != "" {
		// Every interface: drover itself and the admin kubeconfig keep using 127.0.0.1.
		bind, advertise = "0.0.0.0", o.AdvertiseAddress
	}
	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + bind, "--secure-port=" + strconv.Itoa(p.APIServer),
		// Loopback-only hosts: the apiserver cannot pick an advertise address by itself, and 1.37
		// refuses a loopback one with the default endpoint reconciler.
		"--advertise-address=" + advertise, "--endpoint-reconciler-type=none",
		"--tls-cert-file=" + pk("apiserver.crt"), "--tls-private-key-file=" + pk("apiserver.key"),
		"--client-ca-file=" + pk("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pk("sa.pub"), "--service-account-signing-key-file=" + pk("sa.key"),
		"--authorization-mode=Node,RBAC", "--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true", "--profiling=false",
	}
	if !o.ControllerManager {
		// Without the token controller the ServiceAccount admission plugin rejects pods.
		apiArgs = append(apiArgs, "--disable-admission-plugins=ServiceAccount")
	}
	apiArgs = append(apiArgs, o.APIServerArgs...)
	if err := cp.start("kube-apiserver", bin("kube-apiserver"), logDir, apiArgs); err != nil {
		return err
	}
	if err := cp.waitReady(ctx); err != nil {
		return err
	}
	if o.ControllerManager {
		if err := cp.start("kube-controller-manager", bin("kube-controller-manager"), logDir, []string{
			"--kubeconfig=" + cp.componentKubeconfig("kube-controller-manager"),
			"--leader-elect=false", "--secure-port=0",
			"--service-account-private-key-file=" + pk("sa.key"), "--root-ca-file=" + pk("ca.crt"),
			"--cluster-signing-cert-file=" + pk("ca.crt"), "--cluster-signing-key-file=" + pk("ca.key"),
			"--use-service-account-credentials=true", "--controllers=*,-nodeipam",
		}); err != nil {
			return err
		}
	}
	if o.Scheduler {
		if err := cp.start("kube-scheduler", bin("kube-scheduler"), logDir, []string{
			"--kubeconfig=" + cp.componentKubeconfig("kube-scheduler"),
			"--leader-elect=false", "--secure-port=0",
		}); err != nil {
			return err
		}
	}
	if o.Kwok {
		stages := filepath.Join(o.BinDir, "kwok-stages.yaml")
		if err := cp.start("kwok", bin("kwok"), logDir, []string{
			"--kubeconfig=" + cp.componentKubeconfig("kwok"), "--config=" + stages,
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--node-ip=127.0.0.1", "--cidr=10.244.0.0/16",
			"--server-address=127.0.0.1:" + strconv.Itoa(p.Kwok),
		}); err != nil {
			return err
		}
		// Wait for kwok's own server: a kwok that lost its port to another process exits, and
		// without this wait its Nodes would just never become Ready, with no word of why.
		url := fmt.Sprintf("http://127.0.0.1:%d/healthz", p.Kwok)
		if err := cp.poll(ctx, "kwok", &http.Client{Timeout: 2 * time.Second}, url); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) start(name, bin, logDir string, args []string) error {
	p, err := startProcess(name, bin, logDir, args)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, p)
	return nil
}

func (cp *ControlPlane) waitReady(ctx context.Context) error {
	caPEM, err := os.ReadFile(cp.pki.path("ca.crt"))
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(cp.pki.path("admin.crt"), cp.pki.path("admin.key"))
	if err != nil {
		return fmt.Errorf("load admin certificate: %w", err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}
	return cp.poll(ctx, "kube-apiserver", client, fmt.Sprintf("https://127.0.0.1:%d/readyz", cp.apiPort))
}

// poll waits until url answers 200, failing early when a child process exits.
func (cp *ControlPlane) poll(ctx context.Context, name string, client *http.Client, url string) error {
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(cp.opts.StartTimeout)
	for {
		for _, p := range cp.procs {
			if p.exited() {
				return p.exitError()
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; last log lines:\n%s", name, cp.opts.StartTimeout, tail(filepath.Join(cp.opts.DataDir, "logs", name+".log"), 15))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watch reports the first child that exits without being asked to.
func (cp *ControlPlane) watch() {
	cases := make(chan *process, len(cp.procs))
	for _, p := range cp.procs {
		go func() { <-p.done; cases <- p }()
	}
	for range cp.procs {
		p := <-cases
		if !p.wasStopped() {
			cp.exited <- p.exitError()
			return
		}
	}
}

// RenewedCertificates names the certificates this start renewed because they were close to
// expiry, did not match their key or their CA changed ("ca", "apiserver", "admin", ...).
func (cp *ControlPlane) RenewedCertificates() []string { return slices.Clone(cp.renewed) }

// Exited delivers an error when a child process ends unexpectedly.
func (cp *ControlPlane) Exited() <-chan error { return cp.exited }

// Stop stops every child, newest first, and waits for them.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop(15 * time.Second)
	}
}

// PIDs returns the process IDs of the children.
func (cp *ControlPlane) PIDs() map[string]int {
	out := make(map[string]int, len(cp.procs))
	for _, p := range cp.procs {
		out[p.name] = p.pid()
	}
	return out
}

// RESTConfig returns an admin (system:masters) client config.
func (cp *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(cp.restConfig) }

// KubeconfigPath is the admin kubeconfig, <data-dir>/kubeconfig.
func (cp *ControlPlane) KubeconfigPath() string { return filepath.Join(cp.opts.DataDir, "kubeconfig") }

// URL is the API server's URL.
func (cp *ControlPlane) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", cp.apiPort) }

// AdvertisedURL is the API server's URL for other machines: at the advertise address when one
// is set, else URL.
func (cp *ControlPlane) AdvertisedURL() string {
	if a := cp.opts.AdvertiseAddress; a != "" {
		return "https://" + net.JoinHostPort(a, strconv.Itoa(cp.apiPort))
	}
	return cp.URL()
}

// CAFile is the path of the cluster CA certificate.
func (cp *ControlPlane) CAFile() string { return cp.pki.path("ca.crt") }

func (cp *ControlPlane) componentKubeconfig(name string) string {
	return filepath.Join(cp.opts.DataDir, "pki", name+".kubeconfig")
}

func (cp *ControlPlane) writeKubeconfigs() error {
	caPEM, err := os.ReadFile(cp.pki.path("ca.crt"))
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	write := func(path, user string) (*clientcmdapi.Config, error) {
		certPEM, err := os.ReadFile(cp.pki.path(user + ".crt"))
		if err != nil {
			return nil, fmt.Errorf("read %s certificate: %w", user, err)
		}
		keyPEM, err := os.ReadFile(cp.pki.path(user + ".key"))
		if err != nil {
			return nil, fmt.Errorf("read %s key: %w", user, err)
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["drover"] = &clientcmdapi.Cluster{Server: cp.URL(), CertificateAuthorityData: caPEM}
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
		cfg.Contexts["drover"] = &clientcmdapi.Context{Cluster: "drover", AuthInfo: user}
		cfg.CurrentContext = "drover"
		// Written whole or not at all (a temporary file renamed): users and tests read the admin
		// kubeconfig as soon as it appears.
		b, err := clientcmd.Write(*cfg)
		if err != nil {
			return nil, fmt.Errorf("encode kubeconfig %s: %w", path, err)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return nil, fmt.Errorf("write kubeconfig %s: %w", path, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("write kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	admin, err := write(cp.KubeconfigPath(), "admin")
	if err != nil {
		return err
	}
	for _, c := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := write(cp.componentKubeconfig(c), c); err != nil {
			return err
		}
	}
	cp.restConfig, err = clientcmd.NewDefaultClientConfig(*admin, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	cp.restConfig.QPS, cp.restConfig.Burst = 200, 400
	return nil
}

// CheckBinaries verifies that each named binary exists in binDir, runs, and has the pinned version.
func CheckBinaries(ctx context.Context, binDir string, names ...string) error {
	const fix = "run `make tools` (builds them into bin/k8s) or pass --bin-dir"
	for _, name := range names {
		path := filepath.Join(binDir, name)
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%s not found in %s: %s", name, binDir, fix)
		}
		if st.IsDir() || (!strings.HasSuffix(name, ".yaml") && st.Mode()&0o111 == 0) {
			return fmt.Errorf("%s is not an executable file: %s", path, fix)
		}
		want := ""
		switch name {
		case "kube-apiserver", "kube-controller-manager", "kube-scheduler":
			want = "Kubernetes " + KubernetesVersion
		case "etcd":
			want = "etcd Version: " + EtcdVersion
		}
		if want == "" {
			continue
		}
		got, err := binaryVersion(ctx, path)
		if err != nil {
			return fmt.Errorf("%s --version failed (%w): %s", path, err, fix)
		}
		if !strings.Contains(got, want) {
			first, _, _ := strings.Cut(got, "\n")
			return fmt.Errorf("%s is %q, drover needs %q: %s", path, first, want, fix)
		}
	}
	return nil
}

func checkDataDir(dir string) error {
	if dir == "" {
		return errors.New("no data dir given: pass --data-dir")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s cannot be created (%w): pass a writable --data-dir", dir, errors.Unwrap(err))
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("data dir %s is not writable: pass a writable --data-dir or fix its permissions", dir)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}

// choosePorts reuses the ports of an earlier run of this data dir where they are free, so etcd's
// recorded peer URL stays valid, and checks that a requested API server port is free.
func choosePorts(opts Options) (ports, error) {
	path := filepath.Join(opts.DataDir, "ports.json")
	var p ports
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &p)
	}
	if opts.APIServerPort != 0 {
		if !portFree(opts.APIServerPort) {
			return p, fmt.Errorf("port %d on 127.0.0.1 is in use (another drover or API server?): stop it or pass a free --apiserver-port", opts.APIServerPort)
		}
		p.APIServer = opts.APIServerPort
	}
	var err error
	for _, port := range []*int{&p.APIServer, &p.EtcdClient, &p.EtcdPeer, &p.Kwok} {
		if *port != 0 && portFree(*port) {
			continue
		}
		if *port, err = freePort(); err != nil {
			return p, err
		}
	}
	data, _ := json.Marshal(p)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return p, fmt.Errorf("write %s: %w", path, err)
	}
	return p, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// LogTail returns the last lines of a child's log ("kwok", "kube-apiserver", ...), for
// failure messages.
func (cp *ControlPlane) LogTail(name string, lines int) string {
	return tail(filepath.Join(cp.opts.DataDir, "logs", name+".log"), lines)
}
