package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/droverhq/drover/test/envtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// mgmt is the package's one API server (with drover's CRDs), started lazily by tests that need
// it so pure tests stay fast.
var mgmt *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	mgmt, err = envtest.Start("cli", envtest.Options{InstallCRDs: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = mgmt.Stop() }()
	waitPoll = 20 * time.Millisecond
	return m.Run()
}

// mgmtKubeconfig writes an admin kubeconfig of mgmt for the test.
func mgmtKubeconfig(t testing.TB) string {
	t.Helper()
	return kubeconfigFor(t, mgmt.Config, filepath.Join(t.TempDir(), "kubeconfig"))
}

func kubeconfigFor(t testing.TB, cfg *rest.Config, path string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// drover runs the command line in-process and returns stdout, stderr and the error.
func drover(ctx context.Context, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}
