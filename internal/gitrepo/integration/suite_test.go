// Package integration tests GitRepos end to end: a real Git server on loopback (Debian's git
// serving the smart HTTP protocol through git http-backend behind net/http/cgi, the Git
// protocol through git daemon, and git upload-pack behind an SSH server with a host key;
// repositories built with git commits), a management API server running drover's registration, bundle and
// gitrepo controllers, and a downstream API server imported as the Cluster "plain" whose agent
// runs here as a goroutine: a commit reaches the downstream cluster through Bundles and the agent.
package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/bundle"
	"github.com/droverhq/drover/internal/gitrepo"
	"github.com/droverhq/drover/internal/registration"
	"github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/registration/local"
	"github.com/droverhq/drover/internal/server"
	"github.com/droverhq/drover/test/envtest"
)

const (
	ws        = fleetv1alpha1.DefaultWorkspaceNamespace
	agentNS   = "drover-agent"
	plainName = "plain"
	// fetchTimeout is the controller's FetchTimeout here: short, for the unresponsive server test.
	fetchTimeout = 3 * time.Second
)

var (
	mgmt, plain *envtest.Cluster
	git         *gitServer
	sshd        *sshGitServer
	daemon      *gitDaemon
)

// logs holds the tests' log lines at every verbosity drover emits, for the secret scan;
// benchmarks log nothing (nil).
var logs = &envtest.SyncBuffer{}

func TestMain(m *testing.M) {
	if envtest.Benchmarking() {
		ctrl.SetLogger(logr.Discard())
		logs = nil
	} else {
		ctrl.SetLogger(envtest.SuiteLogger(logs))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if git, err = startGitServer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer git.stop()
	if sshd, err = startSSHServer(filepath.Join(git.root, "repos")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sshd.stop()
	if daemon, err = startGitDaemon(filepath.Join(git.root, "repos"), git.home); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer daemon.stop()
	if !suiteNeeded() {
		// Only BenchmarkGitOps1000Clusters runs: it starts its own management API server, and
		// the suite's two would only add their idle CPU to the figures it measures.
		return m.Run()
	}
	type result struct {
		c   *envtest.Cluster
		err error
	}
	plainCh := make(chan result, 1)
	go func() { c, err := envtest.Start("plain", envtest.Options{}); plainCh <- result{c, err} }()
	mgmt, err = startManagement()
	p := <-plainCh
	plain = p.c
	defer func() {
		if mgmt != nil {
			_ = mgmt.Stop()
		}
		if plain != nil {
			_ = plain.Stop()
		}
	}()
	if err = errors.Join(err, p.err); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var secrets *envtest.SecretScan
	if logs != nil {
		if secrets, err = envtest.StartSecretScan(ctx, mgmt, plain); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	// Git credentials (HTTPS passwords, SSH keys), Helm repository credentials, webhook secrets
	// and the agent's tokens never reach a log line, an Event or a status.
	if code == 0 && secrets != nil && !testing.Short() {
		if err := secrets.Check(ctx, 3, map[string]string{"the logs": logs.String()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

// suiteNeeded says whether any test or benchmark selected by -test.run / -test.bench uses the
// suite's API servers and agent: all tests and BenchmarkGitOpsDeploy do.
func suiteNeeded() bool {
	flag.Parse()
	if run := flag.Lookup("test.run").Value.String(); run != "^$" {
		return true
	}
	bench := flag.Lookup("test.bench").Value.String()
	top, _, _ := strings.Cut(bench, "/")
	re, err := regexp.Compile(top)
	return bench == "" || err != nil || re.MatchString("BenchmarkGitOpsDeploy")
}

func startManagement() (*envtest.Cluster, error) {
	c, err := envtest.Start("management", envtest.Options{})
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "config", "crd", "bases", "fleet.drover.io_*.yaml"))
	if err == nil {
		_, err = crenvtest.InstallCRDs(c.Config, crenvtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true})
	}
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("install fleet CRDs: %w", err)
	}
	return c, nil
}

// setup starts the controllers, imports the downstream cluster and starts its agent.
func setup(ctx context.Context) error {
	if err := mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.DefaultNamespace}}); err != nil {
		return err
	}
	if err := mgmt.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.DefaultNamespace, Name: config.DefaultName},
		Data: map[string]string{config.KeyAPIServerURL: mgmt.Config.Host, config.KeyAPIServerCA: string(mgmt.Config.CAData)}}); err != nil {
		return err
	}
	cfg := rest.CopyConfig(mgmt.Config)
	cfg.QPS, cfg.Burst = 200, 400
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: server.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := registration.Setup(ctx, mgr, mgr.GetClient(), registration.Options{}); err != nil {
		return err
	}
	if err := bundle.Setup(mgr, bundle.Options{}); err != nil {
		return err
	}
	if err := (&gitrepo.Reconciler{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), FetchTimeout: fetchTimeout,
		Recorder: mgr.GetEventRecorder("drover-gitrepo")}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := setupWebhook(ctx, mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "controllers stopped:", err)
		}
	}()
	kc, err := local.Kubeconfig(plain.Config)
	if err != nil {
		return err
	}
	if err := mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "kc-" + plainName},
		Data: map[string][]byte{fleetv1alpha1.KeyKubeconfig: kc}}); err != nil {
		return err
	}
	if err := mgmt.Client.Create(ctx, &fleetv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: plainName},
		Spec: fleetv1alpha1.ClusterSpec{KubeConfigSecret: "kc-" + plainName}}); err != nil {
		return err
	}
	// The importer deploys the agent (no pods run on a plain API server); the agent runs here.
	deadline := time.Now().Add(180 * time.Second) // generous: CI machines may be loaded
	for {
		c := &fleetv1alpha1.Cluster{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: plainName}, c); err != nil {
			return err
		}
		if meta.IsStatusConditionTrue(c.Status.Conditions, fleetv1alpha1.ConditionImported) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %s not imported: %+v", plainName, c.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	go func() {
		_ = agent.Run(ctx, agent.Options{Config: plain.Config, Namespace: agentNS, HeartbeatInterval: time.Second,
			RetryMin: time.Second, RetryMax: 4 * time.Second, Identity: "test", DriftInterval: 5 * time.Second})
	}()
	for {
		c := &fleetv1alpha1.Cluster{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ws, Name: plainName}, c); err != nil {
			return err
		}
		if c.Status.Agent.LastSeen != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent of %s never checked in", plainName)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var eventually = envtest.Eventually
