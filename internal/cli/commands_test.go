package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/test/envtest"
)

// setCondition plays the hosted controller: it sets a condition of ns/name once it exists.
func setCondition(t *testing.T, ns, name string, cond metav1.Condition) {
	t.Helper()
	envtest.Eventually(t, 20*time.Second, func() error {
		cl := &v1.Cluster{}
		if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cl); err != nil {
			return err
		}
		meta.SetStatusCondition(&cl.Status.Conditions, cond)
		return mgmt.Client.Status().Update(context.Background(), cl)
	})
}

// setPhase plays the hosted controller: it sets the phase of ns/name once the Cluster exists.
func setPhase(t *testing.T, ns, name string, phase v1.Phase, failure string) {
	t.Helper()
	envtest.Eventually(t, 20*time.Second, func() error {
		cl := &v1.Cluster{}
		if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cl); err != nil {
			return err
		}
		cl.Status.Phase, cl.Status.FailureMessage = phase, failure
		meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: hosted.CondReady, Status: metav1.ConditionFalse, Reason: string(phase), Message: "cluster is " + string(phase)})
		return mgmt.Client.Status().Update(context.Background(), cl)
	})
}

var eksFlags = []string{"--kubernetes-version", "1.33", "--region", "us-west-2", "--credential", "aws", "--service-role", "arn:aws:iam::1:role/eks", "--subnets", "a,b"}

// TestClusterCreateWait: --wait prints each phase change and ends 0 when the cluster is
// active, 3 when it fails or --timeout passes.
func TestClusterCreateWait(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	tests := []struct {
		name    string
		phases  []v1.Phase
		timeout string
		code    int
		want    []string
	}{
		{"active", []v1.Phase{v1.PhaseCreating, v1.PhaseActive}, "20s", ExitOK, []string{"waiting for drover server to take it up", "phase creating: cluster is creating", "phase active"}},
		{"failed", []v1.Phase{v1.PhaseCreating, v1.PhaseFailed}, "2s", ExitNotReady, []string{"phase failed"}},
		{"timeout", nil, "300ms", ExitNotReady, []string{"waiting for drover server to take it up (drover check says whether it runs)"}},
		// The credential Secret is missing: said at once, not at --timeout.
		{"no credentials", []v1.Phase{"nocredentials"}, "60s", ExitNotReady, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := mgmt.Namespace(t)
			done := make(chan struct{})
			var outBuf, errBuf envtest.SyncBuffer
			var err error
			go func() {
				defer close(done)
				cmd := NewRootCommand()
				cmd.SetArgs(append([]string{"cluster", "create", "eks", "--name", "c", "--wait", "--timeout", tt.timeout,
					"--kubeconfig", kc, "-n", ns}, eksFlags...))
				cmd.SetOut(&outBuf)
				cmd.SetErr(&errBuf)
				err = cmd.ExecuteContext(t.Context())
			}()
			// Each phase is set once the command has printed the line of the one before, so
			// that every line is seen however loaded the machine is.
			printed := func(line string) {
				t.Helper()
				envtest.Eventually(t, 20*time.Second, func() error {
					if !strings.Contains(outBuf.String(), "cluster "+ns+"/c: "+line) {
						return fmt.Errorf("no line %q yet:\n%s", line, outBuf.String())
					}
					return nil
				})
			}
			if tt.phases != nil {
				printed("waiting for drover server to take it up")
			}
			for _, p := range tt.phases {
				if p == "nocredentials" {
					setCondition(t, ns, "c", metav1.Condition{Type: hosted.CondCredentials, Status: metav1.ConditionFalse, Reason: v1.ReasonSecretNotFound,
						Message: "Secret " + ns + "/aws named by eksConfig.credentialSecret does not exist: create it."})
					continue
				}
				setPhase(t, ns, "c", p, "boom")
				if p != v1.PhaseFailed && p != v1.PhaseActive {
					printed("phase " + string(p))
				}
			}
			<-done
			out, errOut := outBuf.String(), errBuf.String()
			<-done
			if ExitCode(err) != tt.code {
				t.Fatalf("exit %d (%v), want %d\n%s%s", ExitCode(err), err, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, "cluster "+ns+"/c: "+w) {
					t.Errorf("output lacks progress line %q:\n%s", w, out)
				}
			}
			if tt.name == "timeout" && !strings.Contains(err.Error(), "timed out after 300ms") {
				t.Errorf("timeout error: %v", err)
			}
			if tt.name == "failed" && !strings.Contains(err.Error(), "failed: boom") {
				t.Errorf("failure error: %v, want the failure message", err)
			}
			if tt.name == "no credentials" && (!strings.Contains(err.Error(), "CredentialsValid SecretNotFound: Secret "+ns+"/aws") || !strings.Contains(err.Error(), "drover cluster list -w")) {
				t.Errorf("error %v, want the CredentialsValid condition and how to follow the cluster", err)
			}
			if !strings.Contains(errOut, "Warning: the credential Secret "+ns+"/aws does not exist") {
				t.Errorf("stderr lacks the warning about the missing credential Secret: %q", errOut)
			}
		})
	}
}

// TestClusterCreateFromFileAndDelete: -f creates what the file says; delete --wait ends when
// the Cluster is gone.
func TestClusterCreateFromFileAndDelete(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	file := filepath.Join(t.TempDir(), "gke.yaml")
	manifest := "apiVersion: management.drover.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: from-file\nspec:\n  gkeConfig:\n    clusterName: ff\n    projectID: acme\n    zone: europe-west1-b\n    credentialSecret: gcp\n    kubernetesVersion: \"1.33\"\n    nodePools:\n    - name: pool\n      initialNodeCount: 1\n"
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := drover(t.Context(), "cluster", "create", "gke", "-f", file, "--kubeconfig", kc, "-n", ns); err != nil {
		t.Fatalf("create -f: %v\n%s%s", err, out, errOut)
	}
	cl := &v1.Cluster{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "from-file"}, cl); err != nil || cl.Spec.GKEConfig.Zone != "europe-west1-b" {
		t.Fatalf("created Cluster: %v %+v", err, cl.Spec.GKEConfig)
	}
	if _, _, err := drover(t.Context(), "cluster", "create", "eks", "-f", file, "--kubeconfig", kc, "-n", ns); ExitCode(err) != ExitUsage {
		t.Errorf("create eks -f with a GKE manifest: %v, want a usage error", err)
	}
	if _, _, err := drover(t.Context(), "cluster", "create", "eks", "--name", "x", "--credential", "aws", "--kubeconfig", kc, "-n", ns); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--region") {
		t.Errorf("create eks without --region: %v, want a usage error naming --region", err)
	}
	// Flags a create needs are named as flags, not as the spec fields they fill.
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"eks", "--region", "us-west-2"}, "--kubernetes-version"},
		{[]string{"eks", "--region", "us-west-2", "--kubernetes-version", "1.33"}, "--service-role"},
		{[]string{"eks", "--region", "us-west-2", "--kubernetes-version", "1.33", "--service-role", "arn:aws:iam::1:role/eks"}, "--subnets"},
		{[]string{"aks", "--resource-group", "rg", "--location", "westeurope"}, "--kubernetes-version"},
		{[]string{"gke", "--project", "acme", "--zone", "europe-west1-b"}, "--kubernetes-version"},
	} {
		args := append(append([]string{"cluster", "create"}, tc.args...), "--name", "x", "--credential", "c", "--kubeconfig", kc, "-n", ns)
		if _, _, err := drover(t.Context(), args...); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.flag+" is required") {
			t.Errorf("create %v: %v, want a usage error naming %s", tc.args, err, tc.flag)
		}
	}
	// --cluster-name names the EKS cluster, as it names AKS and GKE ones.
	if out, errOut, err := drover(t.Context(), append([]string{"cluster", "create", "eks", "--name", "e", "--cluster-name", "prod-eks", "--kubeconfig", kc, "-n", ns}, eksFlags...)...); err != nil {
		t.Fatalf("create eks --cluster-name: %v\n%s%s", err, out, errOut)
	}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "e"}, cl); err != nil || cl.Spec.EKSConfig.DisplayName != "prod-eks" {
		t.Errorf("EKS cluster name from --cluster-name: %v %+v", err, cl.Spec.EKSConfig)
	}
	// --dry-run prints the manifest (for Git) and creates nothing; piped back through -f it
	// creates that Cluster.
	out, errOut, err := drover(t.Context(), append([]string{"cluster", "create", "eks", "--name", "dry", "--dry-run", "--kubeconfig", kc, "-n", ns}, eksFlags...)...)
	if err != nil || !strings.Contains(out, "kind: Cluster") || !strings.Contains(out, "apiVersion: management.drover.io/v1alpha1") ||
		!strings.Contains(out, "namespace: "+ns) || !strings.Contains(out, "region: us-west-2") || strings.Contains(out, "status") || strings.Contains(out, "creationTimestamp") {
		t.Fatalf("create --dry-run: %v %s\n%s", err, errOut, out)
	}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "dry"}, &v1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("--dry-run created the Cluster: %v", err)
	}
	dryFile := filepath.Join(t.TempDir(), "dry.yaml")
	if err := os.WriteFile(dryFile, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := drover(t.Context(), "cluster", "create", "eks", "-f", dryFile, "--kubeconfig", kc); err != nil {
		t.Errorf("create -f of the --dry-run output: %v\n%s%s", err, out, errOut)
	}
	if _, _, err := drover(t.Context(), append([]string{"cluster", "create", "eks", "--name", "dry2", "--dry-run=server", "--kubeconfig", kc, "-n", ns}, eksFlags...)...); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--dry-run=server") {
		t.Errorf("--dry-run=server: %v, want a usage error", err)
	}
	// AKS from flags alone: the DNS prefix defaults to the cluster name, one system pool.
	if out, errOut, err := drover(t.Context(), "cluster", "create", "aks", "--name", "pay", "--resource-group", "rg", "--location", "westeurope",
		"--credential", "azure", "--kubernetes-version", "1.33", "--kubeconfig", kc, "-n", ns); err != nil {
		t.Fatalf("create aks: %v\n%s%s", err, out, errOut)
	}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "pay"}, cl); err != nil || cl.Spec.AKSConfig == nil ||
		ptr.Deref(cl.Spec.AKSConfig.DNSPrefix, "") != "pay" || len(cl.Spec.AKSConfig.NodePools) != 1 || ptr.Deref(cl.Spec.AKSConfig.NodePools[0].Count, 0) != 1 {
		t.Errorf("created AKS Cluster: %v %+v", err, cl.Spec.AKSConfig)
	}
	out, _, err = drover(t.Context(), "cluster", "delete", "from-file", "--wait", "--timeout", "20s", "--kubeconfig", kc, "-n", ns)
	if err != nil || !strings.Contains(out, "cluster "+ns+"/from-file: deleted") {
		t.Fatalf("delete --wait: %v\n%s", err, out)
	}
	if _, _, err := drover(t.Context(), "cluster", "delete", "from-file", "--kubeconfig", kc, "-n", ns); ExitCode(err) != ExitError || !strings.Contains(err.Error(), "not found") {
		t.Errorf("second delete: %v, want not found (exit 1)", err)
	}
}

// TestTokenCreatePrintsInstallCommands: token create waits for the token to be issued and prints
// both install commands, without the token's secret values.
func TestTokenCreatePrintsInstallCommands(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	go func() {
		// Play the registration controller.
		for range 200 {
			tok := &fleetv1alpha1.ClusterRegistrationToken{}
			if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "edge"}, tok); err == nil {
				tok.Status.SecretName = "edge"
				meta.SetStatusCondition(&tok.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Issued"})
				if mgmt.Client.Status().Update(context.Background(), tok) == nil {
					return
				}
			}
			time.Sleep(50 * time.Millisecond) //nolint:forbidigo // stand-in controller's resync
		}
	}()
	out, errOut, err := drover(t.Context(), "token", "create", "edge", "--ttl", "2h", "--max-clusters", "3", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatalf("token create: %v\n%s%s", err, out, errOut)
	}
	tok := &fleetv1alpha1.ClusterRegistrationToken{}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "edge"}, tok); err != nil || tok.Spec.TTL.Duration != 2*time.Hour ||
		tok.Spec.MaxClusters == nil || *tok.Spec.MaxClusters != 3 {
		t.Fatalf("token: %v %+v", err, tok.Spec)
	}
	for _, want := range []string{
		"registers at most 3 cluster(s)",
		"drover agent install --token edge --token-namespace " + ns,
		"helm --kubeconfig downstream.kubeconfig install drover-agent charts/drover-agent",
		"kubectl -n " + ns + " get secret edge",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := drover(t.Context(), "token", "create", "x", "--kubeconfig", kc); ExitCode(err) != ExitUsage {
		t.Errorf("token create without --ttl: %v, want a usage error", err)
	}
	// The list shows how many of its places the token has used.
	tok.Status.RegisteredClientIDs = []string{"a"}
	tok.Status.Expires = &metav1.Time{Time: time.Now().Add(90 * time.Minute)}
	if err := mgmt.Client.Status().Update(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = drover(t.Context(), "token", "list", "-o", "wide", "--kubeconfig", kc, "-n", ns)
	if err != nil {
		t.Fatalf("token list: %v\n%s", err, errOut)
	}
	// (AGE, the token's own, comes before the wide SECRET column.)
	if row := strings.Fields(out[strings.LastIndex(strings.TrimRight(out, "\n"), "\n")+1:]); len(row) != 7 || row[6] != "edge" ||
		!slices.Equal(row[:5], []string{"edge", "True", "in", "89m", "1/3"}) && !slices.Equal(row[:5], []string{"edge", "True", "in", "90m", "1/3"}) {
		t.Errorf("token list -o wide row %q, want edge True in 90m 1/3 AGE edge:\n%s", row, out)
	}
	// drover's per-cluster import token registers its cluster only.
	imp := &fleetv1alpha1.ClusterRegistrationToken{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "import-edge-1", Labels: map[string]string{
		fleetv1alpha1.ClusterLabel: "edge-1", fleetv1alpha1.ClusterUIDLabel: "0f8fad5b-d9cb-469f-a165-70867728950e"}},
		Spec: fleetv1alpha1.ClusterRegistrationTokenSpec{TTL: &metav1.Duration{Duration: time.Hour}}}
	if err := mgmt.Client.Create(t.Context(), imp); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = drover(t.Context(), "token", "list", "--kubeconfig", kc, "-n", ns)
	if err != nil || !regexp.MustCompile(`(?m)^import-edge-1 .* edge-1 only +\S+$`).MatchString(out) {
		t.Errorf("token list: %v %s\n%s, want import-edge-1 for edge-1 only", err, errOut, out)
	}
	if _, _, err := drover(t.Context(), "token", "create", "x", "--ttl", "1h", "--max-clusters", "0", "--kubeconfig", kc); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--max-clusters") {
		t.Errorf("token create --max-clusters 0: %v, want a usage error naming the flag", err)
	}

	// get shows one token (never its values), delete revokes it.
	out, errOut, err = drover(t.Context(), "token", "get", "edge", "--kubeconfig", kc, "-n", ns)
	if err != nil || !strings.Contains(out, "Token:") || !strings.Contains(out, "Clusters:") || !strings.Contains(out, "1/3") || !strings.Contains(out, "TTL:") || !strings.Contains(out, "2h0m0s") {
		t.Errorf("token get: %v %s\n%s", err, errOut, out)
	}
	out, _, err = drover(t.Context(), "token", "get", "clusterregistrationtoken/edge", "-o", "name", "--kubeconfig", kc, "-n", ns)
	if err != nil || strings.TrimSpace(out) != "clusterregistrationtoken.fleet.drover.io/edge" {
		t.Errorf("token get -o name: %v %q", err, out)
	}
	out, errOut, err = drover(t.Context(), "token", "delete", "edge", "missing", "--ignore-not-found", "--kubeconfig", kc, "-n", ns)
	if err != nil || !strings.Contains(out, "edge") {
		t.Errorf("token delete: %v %s\n%s", err, errOut, out)
	}
	if err := mgmt.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "edge"}, &fleetv1alpha1.ClusterRegistrationToken{}); !apierrors.IsNotFound(err) {
		t.Errorf("token edge after delete: %v, want not found", err)
	}
	if _, _, err := drover(t.Context(), "token", "delete", "edge", "--kubeconfig", kc, "-n", ns); ExitCode(err) != ExitError || !strings.Contains(err.Error(), "not found") {
		t.Errorf("token delete of a deleted token: %v, want not found", err)
	}
}

// TestCompletion: names of clusters, bundles and migrations complete through cobra's
// __complete entry point, as the shell scripts call it.
func TestCompletion(t *testing.T) {
	t.Parallel()
	kc := mgmtKubeconfig(t)
	ns := mgmt.Namespace(t)
	for _, o := range []client.Object{
		&v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-east"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "a", Region: "us-east-1", CredentialSecret: "aws"}}},
		&v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-west"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "b", Region: "us-west-2", CredentialSecret: "aws"}}},
		&v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging"}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{DisplayName: "c", Region: "us-west-2", CredentialSecret: "aws"}}},
		&fleetv1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: fleetv1alpha1.BundleSpec{Targets: []fleetv1alpha1.BundleTarget{{ClusterName: "x"}}}},
	} {
		if err := mgmt.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "get", "prod"}, "prod-east\nprod-west\n:4\n"},
		{[]string{"cluster", "get", ""}, "prod-east\nprod-west\nstaging\n:4\n"},
		{[]string{"cluster", "get", "staging", ""}, "prod-east\nprod-west\n:4\n"}, // get takes several names, as kubectl get
		{[]string{"cluster", "delete", "prod-east", "prod"}, "prod-west\n:4\n"},   // names already given are left out
		{[]string{"bundle", "status", ""}, "web\n:4\n"},
		{[]string{"migrate", "get", ""}, ":4\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			args := append([]string{cobra.ShellCompRequestCmd}, tt.args[:len(tt.args)-1]...)
			args = append(args, "--kubeconfig", kc, "-n", ns, tt.args[len(tt.args)-1])
			out, errOut, err := drover(t.Context(), args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut)
			}
			if out != tt.want {
				t.Errorf("__complete %v:\n%q\nwant\n%q", tt.args, out, tt.want)
			}
		})
	}
}

// TestEveryCommandHasAnExample walks the command tree.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" && c.Parent() != nil && c.Parent().Name() != "completion" && c.Example == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := NewRootCommand()
	root.InitDefaultCompletionCmd()
	walk(root)
}
