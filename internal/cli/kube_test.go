package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/test/envtest"
)

// writeKubeconfig writes a kubeconfig whose contexts point at hosts; the first is current.
// A context named "ns-<x>" sets namespace x.
func writeKubeconfig(t *testing.T, path string, contexts ...string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for i, name := range contexts {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example:6443"}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "x"}
		ctx := &clientcmdapi.Context{Cluster: name, AuthInfo: name}
		if ns, ok := strings.CutPrefix(name, "ns-"); ok {
			ctx.Namespace = ns
		}
		cfg.Contexts[name] = ctx
		if i == 0 {
			cfg.CurrentContext = name
		}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// isolateKube gives the test an empty home kubeconfig, no $KUBECONFIG, no pod and a service
// account directory of its own.
func isolateKube(t *testing.T) (home, saDir string) {
	t.Helper()
	dir := t.TempDir()
	home = filepath.Join(dir, "home-config")
	saDir = filepath.Join(dir, "serviceaccount")
	oldHome, oldSA := clientcmd.RecommendedHomeFile, serviceAccountDir
	clientcmd.RecommendedHomeFile, serviceAccountDir = home, saDir
	t.Cleanup(func() { clientcmd.RecommendedHomeFile, serviceAccountDir = oldHome, oldSA })
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return home, saDir
}

func fakePod(t *testing.T, saDir, namespace string) {
	t.Helper()
	if err := os.MkdirAll(saDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"token": "pod-token", "namespace": namespace, "ca.crt": ""} {
		if err := os.WriteFile(filepath.Join(saDir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
}

// TestKubeconfigResolution: --kubeconfig, $KUBECONFIG, ~/.kube/config and the pod's service
// account, in kubectl's order, with --context and -n on top.
func TestKubeconfigResolution(t *testing.T) {
	tests := []struct {
		name     string
		env      []string // contexts of the $KUBECONFIG file (none: unset)
		home     []string // contexts of ~/.kube/config (none: absent)
		flagFile []string // contexts of the --kubeconfig file (none: not passed)
		pod      string   // pod namespace (empty: not in a pod)
		noToken  bool     // the pod has no service account token mounted
		envPath  string   // $KUBECONFIG set to this path (which may not exist)
		args     []string
		host     string
		token    string // the bearer token the config carries (not checked when empty)
		ns       string
		source   string
		explicit bool
		err      string
	}{
		{name: "home file", home: []string{"home"}, host: "https://home.example:6443", source: "home-config"},
		{name: "env wins over home", env: []string{"env"}, home: []string{"home"}, host: "https://env.example:6443", source: "$KUBECONFIG", explicit: true},
		{name: "flag wins over env", env: []string{"env"}, flagFile: []string{"flag"}, host: "https://flag.example:6443", source: "--kubeconfig", explicit: true},
		{name: "flag wins over pod", flagFile: []string{"flag"}, pod: "drover-system", host: "https://flag.example:6443", source: "--kubeconfig", explicit: true},
		{name: "context picks cluster and namespace", env: []string{"env", "ns-team-a"}, args: []string{"--context", "ns-team-a"}, host: "https://ns-team-a.example:6443", ns: "team-a", source: "$KUBECONFIG", explicit: true},
		{name: "-n wins over context namespace", env: []string{"ns-team-a"}, args: []string{"-n", "other"}, host: "https://ns-team-a.example:6443", ns: "other", source: "$KUBECONFIG", explicit: true},
		{name: "--namespace long form", env: []string{"env"}, args: []string{"--namespace", "long"}, host: "https://env.example:6443", ns: "long", source: "$KUBECONFIG", explicit: true},
		{name: "unknown context", env: []string{"env"}, args: []string{"--context", "nope"}, err: `context "nope" does not exist`},
		{name: "in cluster", pod: "drover-system", host: "https://10.96.0.1:443", ns: "drover-system", source: inClusterSource, explicit: true},
		{name: "in cluster with -n", pod: "drover-system", args: []string{"-n", "x"}, host: "https://10.96.0.1:443", ns: "x", source: inClusterSource, explicit: true},
		{name: "home file wins over pod", home: []string{"home"}, pod: "drover-system", host: "https://home.example:6443", source: "home-config"},
		{name: "in cluster without a token", pod: "drover-system", noToken: true, err: "in a pod (KUBERNETES_SERVICE_HOST is set) but no service account token"},
		{name: "nothing", err: "no kubeconfig: pass --kubeconfig, set $KUBECONFIG"},
		{name: "context without kubeconfig", pod: "p", args: []string{"--context", "c"}, err: "--context c: no kubeconfig"},
		{name: "missing --kubeconfig file", args: []string{"--kubeconfig", "/nonexistent/kc"}, err: "--kubeconfig /nonexistent/kc: file not found"},
		{name: "--server without kubeconfig", args: []string{"--server", "https://api.example:6443", "--token", "t0k"}, host: "https://api.example:6443", token: "t0k", source: "--server", explicit: true},
		{name: "--server wins over the file's", env: []string{"env"}, args: []string{"--server", "https://other.example:6443"}, host: "https://other.example:6443", token: "x", source: "--server", explicit: true},
		{name: "--server wins over pod", pod: "drover-system", args: []string{"--server", "https://api.example:6443", "--insecure-skip-tls-verify"}, host: "https://api.example:6443", source: "--server", explicit: true},
		{name: "--token in a pod", pod: "drover-system", args: []string{"--token", "mine"}, host: "https://10.96.0.1:443", ns: "drover-system", token: "mine", source: inClusterSource, explicit: true},
		{name: "--token over the file's user", env: []string{"env"}, args: []string{"--token", "mine"}, host: "https://env.example:6443", token: "mine", source: "$KUBECONFIG", explicit: true},
		{name: "missing $KUBECONFIG file", home: []string{"home"}, envPath: "/nonexistent/kc", err: "$KUBECONFIG is /nonexistent/kc, and no such file exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, saDir := isolateKube(t)
			dir := t.TempDir()
			if tt.env != nil {
				t.Setenv("KUBECONFIG", writeKubeconfig(t, filepath.Join(dir, "env"), tt.env...))
			}
			if tt.envPath != "" {
				t.Setenv("KUBECONFIG", tt.envPath)
			}
			if tt.home != nil {
				writeKubeconfig(t, home, tt.home...)
			}
			args := tt.args
			if tt.flagFile != nil {
				args = append(args, "--kubeconfig", writeKubeconfig(t, filepath.Join(dir, "flag"), tt.flagFile...))
			}
			if tt.pod != "" {
				fakePod(t, saDir, tt.pod)
				if tt.noToken {
					if err := os.Remove(filepath.Join(saDir, "token")); err != nil {
						t.Fatal(err)
					}
				}
			}
			root, k := newRoot()
			if err := root.PersistentFlags().Parse(args); err != nil {
				t.Fatal(err)
			}
			got, err := k.resolve()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Config.Host != tt.host || got.Namespace != tt.ns || !strings.Contains(got.Source, tt.source) || got.Explicit != tt.explicit {
				t.Errorf("got host %s ns %q source %q explicit %v; want %s %q %q %v", got.Config.Host, got.Namespace, got.Source, got.Explicit, tt.host, tt.ns, tt.source, tt.explicit)
			}
			if tt.token != "" && got.Config.BearerToken != tt.token {
				t.Errorf("bearer token %q, want %q", got.Config.BearerToken, tt.token)
			}
			if tt.pod != "" && tt.token == "" && got.Source == inClusterSource &&
				(got.Config.BearerTokenFile != filepath.Join(saDir, "token") || got.Config.CAFile != filepath.Join(saDir, "ca.crt")) {
				t.Errorf("in-cluster token file %s, CA %s; want the service account's", got.Config.BearerTokenFile, got.Config.CAFile)
			}
		})
	}
}

// TestServerChoosesItsCluster: `drover server` picks embedded or existing explicitly and its
// first line says which.
func TestServerChoosesItsCluster(t *testing.T) {
	tests := []struct {
		name     string
		env, pod bool
		home     bool
		args     []string
		embedded bool
		line     string
		code     int // non-zero: the choice fails with this exit code
	}{
		{name: "nothing: embedded", home: true, embedded: true, line: "Using an embedded control plane in /data (no --kubeconfig, no $KUBECONFIG, not in a pod"},
		{name: "--embedded", env: true, args: []string{"--embedded"}, embedded: true, line: "(--embedded)"},
		{name: "--embedded with --kubeconfig", args: []string{"--embedded", "--kubeconfig", "KC"}, code: ExitUsage},
		{name: "--kubeconfig", args: []string{"--kubeconfig", "KC"}, line: "Using the existing cluster at https://flag.example:6443 from --kubeconfig"},
		{name: "$KUBECONFIG", env: true, line: "Using the existing cluster at https://env.example:6443 from $KUBECONFIG"},
		{name: "in a pod", pod: true, line: "Using the existing cluster at https://10.96.0.1:443 from the in-cluster service account (running in a pod)"},
		{name: "--embedded=false uses the home file", home: true, args: []string{"--embedded=false"}, line: "Using the existing cluster at https://home.example:6443 from "},
		{name: "--embedded=false with nothing", args: []string{"--embedded=false"}, code: ExitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, saDir := isolateKube(t)
			dir := t.TempDir()
			if tt.env {
				t.Setenv("KUBECONFIG", writeKubeconfig(t, filepath.Join(dir, "env"), "env"))
			}
			if tt.home {
				writeKubeconfig(t, home, "home")
			}
			if tt.pod {
				fakePod(t, saDir, "drover-system")
			}
			flagFile := writeKubeconfig(t, filepath.Join(dir, "flag"), "flag")
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "KC", flagFile)
			}
			root, k := newRoot()
			cmd, _, err := root.Find([]string{"server"})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			embedded, _ := cmd.Flags().GetBool("embedded")
			got, err := chooseServerCluster(cmd, k, embedded)
			if tt.code != 0 {
				if ExitCode(err) != tt.code {
					t.Fatalf("err %v (exit %d), want exit %d", err, ExitCode(err), tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got.target == nil) != tt.embedded {
				t.Errorf("embedded %v, want %v", got.target == nil, tt.embedded)
			}
			if line := got.line("/data"); !strings.Contains(line, tt.line) {
				t.Errorf("first line %q, want it to contain %q", line, tt.line)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("x"), 1},
		{usageErrorf("bad"), 2},
		{withCode(ExitNotReady, errors.New("timed out")), 3},
		{withCode(ExitRefused, errors.New("refused")), 4},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestServerAndTokenFlags: with no kubeconfig anywhere, --server, --token and
// --certificate-authority reach the API server as the token's identity, as with kubectl.
func TestServerAndTokenFlags(t *testing.T) {
	isolateKube(t)
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	sa, err := mgmt.ServiceAccountConfig(ctx, ns, "reader")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, mgmt.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"fleet", "list", "-n", ns, "--server", mgmt.Config.Host, "--token", sa.BearerToken, "--certificate-authority", caFile}
	_, _, err = drover(ctx, args...)
	if err == nil || !strings.Contains(err.Error(), "system:serviceaccount:"+ns+":reader") {
		t.Fatalf("as a service account without rights: err %v, want a refusal naming it", err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "list-clusters"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"fleet.drover.io"}, Resources: []string{"clusters"}, Verbs: []string{"list"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "list-clusters"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "reader"}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		_, _, err := drover(ctx, args...)
		return err
	})
	if _, _, err := drover(ctx, append(args[:len(args)-2], "--insecure-skip-tls-verify")...); err != nil {
		t.Errorf("--insecure-skip-tls-verify instead of the CA: %v", err)
	}
}
