package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/hosted"
)

func kubeconfigFile(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: mgmt.Config.Host, CertificateAuthorityData: mgmt.Config.CAData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: mgmt.Config.CertData, ClientKeyData: mgmt.Config.KeyData}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := cli.NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestCLIImportListAndGet(t *testing.T) {
	t.Parallel()
	e := newEKSEnv(t)
	kc := kubeconfigFile(t)
	e.console.createCluster(t, "tf-made", "1.32")
	e.simTime.Advance(simDelay)

	if out, err := runCLI(t, "cluster", "import", "eks", "--kubeconfig", kc, "-n", e.ns, "--name", "tf-made", "--credential", "aws"); err == nil || !strings.Contains(err.Error(), "--region") {
		t.Fatalf("import without --region: %v %s", err, out)
	}
	if out, err := runCLI(t, "cluster", "import", "eks", "--kubeconfig", kc, "-n", e.ns, "--name", "tf-made", "--region", "us-west-2", "--credential", "aws"); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	c := &v1.Cluster{}
	if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "tf-made"}, c); err != nil || !c.Spec.EKSConfig.Imported {
		t.Fatalf("imported Cluster: %v %+v", err, c.Spec.EKSConfig)
	}
	e.settle("tf-made")
	e.edit("tf-made", func(c *v1.EKSClusterConfig) { c.Tags = map[string]string{"owner": "terraform", "managed-by": "drover"} })
	e.settle("tf-made")

	out, err := runCLI(t, "cluster", "get", "tf-made", "--kubeconfig", kc, "-n", e.ns)
	if err != nil {
		t.Fatalf("get: %v\n%s", err, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	if l := lines["eksConfig.tags[managed-by]"]; !strings.Contains(l, "managed") {
		t.Errorf("tags row not shown as managed: %q\n%s", l, out)
	}
	if l := lines["eksConfig.kubernetesVersion"]; !strings.Contains(l, `"1.32"`) || strings.Contains(l, "managed") {
		t.Errorf("kubernetesVersion row should show upstream 1.32, unmanaged: %q\n%s", l, out)
	}

	out, err = runCLI(t, "cluster", "list", "--kubeconfig", kc, "-n", e.ns)
	if err != nil || !strings.Contains(out, "tf-made") || !strings.Contains(out, "eks") || !strings.Contains(out, "active") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "cluster", "get", "nope", "--kubeconfig", kc, "-n", e.ns); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("get of a missing cluster: %v", err)
	}
}

// TestCLIGetEveryProvider: `drover cluster get` shows the effective state of a cluster of each
// provider, with managed fields marked.
func TestCLIGetEveryProvider(t *testing.T) {
	t.Parallel()
	kc := kubeconfigFile(t)
	forEachProvider(t, func(t *testing.T, h harness) {
		e := newEnv(t, h)
		e.create(h.created("shown"))
		out, err := runCLI(t, "cluster", "get", "shown", "--kubeconfig", kc, "-n", e.ns)
		if err != nil {
			t.Fatalf("get: %v\n%s", err, out)
		}
		if !strings.Contains(out, "("+h.name()+")") || !strings.Contains(out, "phase: active") {
			t.Errorf("header does not name the provider and phase:\n%s", out)
		}
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, h.name()+"Config.") && strings.Contains(l, "team") && strings.Contains(l, `"platform"`) && strings.Contains(l, "managed") {
				found = true
			}
		}
		if !found {
			t.Errorf("no managed row for the team tag/label:\n%s", out)
		}
		list, err := runCLI(t, "cluster", "list", "--kubeconfig", kc, "-n", e.ns)
		if err != nil || !strings.Contains(list, h.name()) {
			t.Errorf("list: %v\n%s", err, list)
		}
	})
}

// TestCLIDeleteWaitWithoutCredentials: deleting a created cluster whose credential Secret is gone
// shows phase deleting and CredentialsValid=False, and `cluster delete --wait` says so at once
// (exit 3) instead of waiting out --timeout; once the Secret is back the delete goes on.
func TestCLIDeleteWaitWithoutCredentials(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEKSEnv(t)
	kc := kubeconfigFile(t)
	e.create(created("orphan"))
	secret := &corev1.Secret{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "aws"}, secret); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Delete(ctx, e.get("orphan")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reconcile("orphan"); err != nil {
		t.Fatal(err)
	}
	c := e.get("orphan")
	if c.Status.Phase != v1.PhaseDeleting || !condIs(c, hosted.CondCredentials, metav1.ConditionFalse) {
		t.Fatalf("deleting without credentials: phase %q, conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	out, err := runCLI(t, "cluster", "delete", "orphan", "--wait", "--timeout", "5m", "--kubeconfig", kc, "-n", e.ns)
	if cli.ExitCode(err) != cli.ExitNotReady || !strings.Contains(err.Error(), "CredentialsValid SecretNotFound") || !strings.Contains(err.Error(), "delete is pending") {
		t.Fatalf("delete --wait without credentials: %v\n%s", err, out)
	}
	secret.ResourceVersion, secret.UID = "", ""
	if err := mgmt.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	e.settle("orphan")
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "orphan"}, &v1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster still there once its credentials are back: %v", err)
	}
}
