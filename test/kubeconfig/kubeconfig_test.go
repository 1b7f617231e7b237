package kubeconfig

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"github.com/aws/aws-sdk-go-v2/aws"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	aksim "github.com/droverhq/drover/pkg/cloudsim/aks"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	gkesim "github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"github.com/droverhq/drover/test/envtest"
)

// viewerKubeconfig is a management kubeconfig for a ServiceAccount of ns that may get and list
// hosted Clusters there and nothing else (no Secrets), so a command that read drover's
// credential Secret would fail with 403.
func viewerKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := t.Context()
	objs := []any{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-viewer"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1.GroupVersion.Group}, Resources: []string{"clusters"}, Verbs: []string{"get", "list"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cluster-viewer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "viewer"}}},
	}
	cs := mgmt.Clientset
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := envtest.TokenConfig(ctx, cs, mgmt.Config, ns, "viewer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["mgmt"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["viewer"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["mgmt"] = &clientcmdapi.Context{Cluster: "mgmt", AuthInfo: "viewer", Namespace: ns}
	kc.CurrentContext = "mgmt"
	path := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// hosted creates the hosted Cluster (imported, with drover's credential Secret cred holding
// data) in ns, as drover would have it, and sets status when given.
func hosted(t *testing.T, cl *v1.Cluster, secret map[string]string, status *v1.ClusterStatus) {
	t.Helper()
	ctx := t.Context()
	if err := mgmt.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: "cred"}, StringData: secret}); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if status != nil {
		cl.Status = *status
		if err := mgmt.Client.Status().Update(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
}

// cannotReadSecrets checks the viewer really lacks get on Secrets.
func cannotReadSecrets(t *testing.T, u user, mgmtKC string) {
	t.Helper()
	if r := u.kubectl(mgmtKC, "auth", "can-i", "get", "secrets"); strings.TrimSpace(r.stdout) != "no" {
		t.Fatalf("the viewer can get secrets: %q %s", r.stdout, r.stderr)
	}
}

// wantError checks a command failed with exit 1 and a message containing every want.
func wantError(t *testing.T, what string, r result, want ...string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("%s: exit 0, want an error\n%s", what, r.stdout)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", what, w, r.stderr)
		}
	}
}

// TestEKSKubeconfig: the printed kubeconfig authenticates on the cluster as the caller's IAM
// principal (not drover's), through `drover cluster token eks` as kubectl's exec plugin.
func TestEKSKubeconfig(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const (
		region               = "eu-west-1"
		droverKey, droverSec = "AKIADROVERKUBECFG001", "kubeconfig-test-drover-secret"
		callerKey, callerSec = "AKIADROVERKUBECFG002", "kubeconfig-test-caller-secret"
		name, serviceRoleARN = "prod", "arn:aws:iam::123456789012:role/eks"
	)
	sim := eksim.New(eksim.Options{Credentials: map[string]string{droverKey: droverSec, callerKey: callerSec}, Delay: -1, Backend: backend})
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	register(t, sim)
	// drover created the cluster (its principal is the creator, admin); the console gave the
	// caller an access entry of their own.
	api := awseks.NewFromConfig(aws.Config{Region: region, Credentials: awscreds.NewStaticCredentialsProvider(droverKey, droverSec, "")},
		func(o *awseks.Options) { o.BaseEndpoint = aws.String(ts.URL) })
	if _, err := api.CreateCluster(ctx, &awseks.CreateClusterInput{Name: aws.String(name), RoleArn: aws.String(serviceRoleARN),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-0a1b2c3d4e5f60001"}}}); err != nil {
		t.Fatal(err)
	}
	caller := sim.Principal(callerKey)
	if _, err := api.CreateAccessEntry(ctx, &awseks.CreateAccessEntryInput{ClusterName: aws.String(name), PrincipalArn: aws.String(caller)}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.AssociateAccessPolicy(ctx, &awseks.AssociateAccessPolicyInput{ClusterName: aws.String(name), PrincipalArn: aws.String(caller),
		PolicyArn: aws.String(eksim.ClusterAdminPolicy), AccessScope: &ekstypes.AccessScope{Type: ekstypes.AccessScopeTypeCluster}}); err != nil {
		t.Fatal(err)
	}
	ns := mgmt.Namespace(t)
	hosted(t, &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{EKSConfig: &v1.EKSClusterConfig{
		DisplayName: name, Region: region, Imported: true, CredentialSecret: "cred"}}},
		map[string]string{"accessKeyID": droverKey, "secretAccessKey": droverSec, "endpoint": ts.URL}, nil)
	mgmtKC := viewerKubeconfig(t, ns)

	u := newUser(t, "KUBECONFIG="+mgmtKC, "AWS_ACCESS_KEY_ID="+callerKey, "AWS_SECRET_ACCESS_KEY="+callerSec)
	cannotReadSecrets(t, u, mgmtKC)
	kc := filepath.Join(t.TempDir(), "prod.kubeconfig")
	u.drover(0, "cluster", "kubeconfig", name, "--endpoint", ts.URL, "-o", kc)
	if fi, err := os.Stat(kc); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v, mode %v; want 0600", err, fi)
	}
	exec := execOf(t, kc)
	if exec.Command != "drover" || !slices.Equal(exec.Args, []string{"cluster", "token", "eks", "--cluster-name", name, "--region", region, "--endpoint", ts.URL}) {
		t.Errorf("exec plugin %s %v", exec.Command, exec.Args)
	}
	if got := u.whoami(kc); got != caller || got == sim.Principal(droverKey) {
		t.Fatalf("authenticated as %q, want the caller %q (drover is %q)", got, caller, sim.Principal(droverKey))
	}

	// The token the plugin prints: an ExecCredential expiring before EKS stops accepting it.
	r := u.drover(0, "cluster", "token", "eks", "--cluster-name", name, "--region", region, "--endpoint", ts.URL)
	var ec struct {
		APIVersion, Kind string
		Status           struct {
			Token               string
			ExpirationTimestamp time.Time
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &ec); err != nil {
		t.Fatalf("drover cluster token eks: %v\n%s", err, r.stdout)
	}
	if ec.Kind != "ExecCredential" || !strings.HasPrefix(ec.Status.Token, "k8s-aws-v1.") ||
		time.Until(ec.Status.ExpirationTimestamp) < 10*time.Minute || time.Until(ec.Status.ExpirationTimestamp) > 15*time.Minute {
		t.Errorf("ExecCredential %s %s, token prefix %.11q, expires in %s; want a k8s-aws-v1 token for 10-15 min",
			ec.APIVersion, ec.Kind, ec.Status.Token, time.Until(ec.Status.ExpirationTimestamp))
	}

	// --exec aws: aws eks get-token, with STS at the simulator.
	r = u.drover(0, "cluster", "kubeconfig", name, "--endpoint", ts.URL, "--exec", "aws")
	awsExec := execOfBytes(t, []byte(r.stdout))
	if awsExec.Command != "aws" || !slices.Contains(awsExec.Args, "get-token") || !slices.Contains(awsExec.Args, name) ||
		len(awsExec.Env) != 1 || awsExec.Env[0].Value != ts.URL {
		t.Errorf("--exec aws: %s %v env %v", awsExec.Command, awsExec.Args, awsExec.Env)
	}

	// Without AWS credentials: the kubeconfig cannot be made, and kubectl's plugin says why.
	none := newUser(t, "KUBECONFIG="+mgmtKC)
	wantError(t, "kubeconfig without AWS credentials", none.run(filepath.Join(droverDir, "drover"), "cluster", "kubeconfig", name, "--endpoint", ts.URL),
		"no AWS credentials", "AWS_ACCESS_KEY_ID")
	wantError(t, "kubectl without AWS credentials", none.kubectl(kc, "get", "ns"), "no AWS credentials", "AWS_ACCESS_KEY_ID")
}

func execOf(t *testing.T, path string) *clientcmdapi.ExecConfig {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return execOfBytes(t, b)
}

func execOfBytes(t *testing.T, b []byte) *clientcmdapi.ExecConfig {
	t.Helper()
	cfg, err := clientcmd.Load(b)
	if err != nil {
		t.Fatalf("the printed kubeconfig: %v\n%s", err, b)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil || cfg.AuthInfos[ctx.AuthInfo].Exec == nil {
		t.Fatalf("the printed kubeconfig has no exec user in its current context:\n%s", b)
	}
	if cfg.AuthInfos[ctx.AuthInfo].Token != "" {
		t.Fatalf("the printed kubeconfig holds a token:\n%s", b)
	}
	return cfg.AuthInfos[ctx.AuthInfo].Exec
}

// TestGKEKubeconfig: the printed kubeconfig authenticates as the caller's service account (from
// Application Default Credentials), not drover's, through `drover cluster token gke`; the
// GKE API is found through gcloud's CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER.
func TestGKEKubeconfig(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const (
		project, region = "kubeconfig-test", "europe-west1"
		name            = "prod"
		droverEmail     = "drover@kubeconfig-test.iam.gserviceaccount.com"
		callerEmail     = "alice@kubeconfig-test.iam.gserviceaccount.com"
	)
	clock := &simcore.ShiftedClock{}
	sim := gkesim.NewTestServer(t, gkesim.Options{Clock: clock, Delay: time.Minute, Backend: backend})
	register(t, sim)
	droverKey, err := sim.NewServiceAccountKey(droverEmail, project)
	if err != nil {
		t.Fatal(err)
	}
	callerKey, err := sim.NewServiceAccountKey(callerEmail, project)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, sim.ClientOptions(droverKey)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Projects.Locations.Clusters.Create("projects/"+project+"/locations/"+region,
		&container.CreateClusterRequest{Cluster: &container.Cluster{Name: name, InitialNodeCount: 1}}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	ns := mgmt.Namespace(t)
	hosted(t, &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{GKEConfig: &v1.GKEClusterConfig{
		ClusterName: name, ProjectID: project, Region: region, Imported: true, CredentialSecret: "cred"}}},
		map[string]string{"serviceAccountJSON": string(droverKey), "endpoint": sim.URL}, nil)
	mgmtKC := viewerKubeconfig(t, ns)
	keyFile := filepath.Join(t.TempDir(), "alice.json")
	if err := os.WriteFile(keyFile, callerKey, 0o600); err != nil {
		t.Fatal(err)
	}

	u := newUser(t, "KUBECONFIG="+mgmtKC, "GOOGLE_APPLICATION_CREDENTIALS="+keyFile, "CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER="+sim.URL+"/")
	cannotReadSecrets(t, u, mgmtKC)
	r := u.drover(0, "cluster", "kubeconfig", name)
	kc := filepath.Join(t.TempDir(), "prod.kubeconfig")
	if err := os.WriteFile(kc, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if exec := execOf(t, kc); exec.Command != "drover" || !slices.Equal(exec.Args, []string{"cluster", "token", "gke"}) {
		t.Errorf("exec plugin %s %v", exec.Command, exec.Args)
	}
	if got := u.whoami(kc); got != callerEmail {
		t.Fatalf("authenticated as %q, want the caller %q (drover is %q)", got, callerEmail, droverEmail)
	}
	if exec := execOfBytes(t, []byte(u.drover(0, "cluster", "kubeconfig", name, "--exec", "gcloud").stdout)); exec.Command != "gke-gcloud-auth-plugin" || !exec.ProvideClusterInfo {
		t.Errorf("--exec gcloud: %s, provideClusterInfo %v", exec.Command, exec.ProvideClusterInfo)
	}

	none := newUser(t, "KUBECONFIG="+mgmtKC, "CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER="+sim.URL+"/")
	wantError(t, "kubeconfig without ADC", none.run(filepath.Join(droverDir, "drover"), "cluster", "kubeconfig", name),
		"no Google Application Default Credentials", "GOOGLE_APPLICATION_CREDENTIALS")
	wantError(t, "kubectl without ADC", none.kubectl(kc, "get", "ns"), "GOOGLE_APPLICATION_CREDENTIALS")
}

// TestAKSKubeconfig: the kubeconfig is the cluster user (--admin: admin) credential AKS lists
// to the caller's service principal: one without access to the subscription is refused where
// drover's credential would not be, and one without credentials is told what to set.
func TestAKSKubeconfig(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const (
		tenant                 = "44444444-4444-4444-8444-444444444444"
		droverID, droverSecret = "55555555-5555-4555-8555-555555555555", "kubeconfig-test-drover-secret"
		callerID, callerSecret = "66666666-6666-4666-8666-666666666666", "kubeconfig-test-caller-secret"
		otherID, otherSecret   = "77777777-7777-4777-8777-777777777777", "kubeconfig-test-other-secret"
		sub, otherSub          = "88888888-8888-4888-8888-888888888888", "99999999-9999-4999-8999-999999999999"
		rg, name               = "rg-kubeconfig", "prod"
	)
	sim := aksim.NewTestServer(t, aksim.Options{Credentials: []aksim.Credential{
		{TenantID: tenant, ClientID: droverID, ClientSecret: droverSecret, Subscriptions: []string{sub}},
		{TenantID: tenant, ClientID: callerID, ClientSecret: callerSecret, Subscriptions: []string{sub}},
		{TenantID: tenant, ClientID: otherID, ClientSecret: otherSecret, Subscriptions: []string{otherSub}},
	}, Delay: 20 * time.Millisecond, Backend: backend})
	register(t, sim)
	cred, err := azidentity.NewClientSecretCredential(tenant, droverID, droverSecret, sim.CredentialOptions())
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := armcontainerservice.NewManagedClustersClient(sub, cred, sim.ARMClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := clusters.BeginCreateOrUpdate(ctx, rg, name, armcontainerservice.ManagedCluster{
		Location: to.Ptr("westeurope"),
		Identity: &armcontainerservice.ManagedClusterIdentity{Type: to.Ptr(armcontainerservice.ResourceIdentityTypeSystemAssigned)},
		Properties: &armcontainerservice.ManagedClusterProperties{DNSPrefix: to.Ptr(name),
			AgentPoolProfiles: []*armcontainerservice.ManagedClusterAgentPoolProfile{{Name: to.Ptr("system"), Count: to.Ptr[int32](1),
				VMSize: to.Ptr("Standard_D2s_v3"), Mode: to.Ptr(armcontainerservice.AgentPoolModeSystem)}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	created, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ns := mgmt.Namespace(t)
	// The subscription comes from the status drover wrote (the ARM ID), as the Secret is not read.
	hosted(t, &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ClusterSpec{AKSConfig: &v1.AKSClusterConfig{
		ClusterName: name, ResourceGroup: rg, ResourceLocation: "westeurope", Imported: true, CredentialSecret: "cred"}}},
		map[string]string{"tenantID": tenant, "subscriptionID": sub, "clientID": droverID, "clientSecret": droverSecret},
		&v1.ClusterStatus{AKSStatus: &v1.AKSStatus{ID: *created.ID}})
	mgmtKC := viewerKubeconfig(t, ns)
	caFile := filepath.Join(t.TempDir(), "aks-ca.pem")
	if err := os.WriteFile(caFile, sim.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(id, secret string) user {
		e := []string{"KUBECONFIG=" + mgmtKC, "AZURE_AUTHORITY_HOST=" + sim.URL(), "SSL_CERT_FILE=" + caFile}
		if id != "" {
			e = append(e, "AZURE_TENANT_ID="+tenant, "AZURE_CLIENT_ID="+id, "AZURE_CLIENT_SECRET="+secret)
		}
		return newUser(t, e...)
	}

	u := env(callerID, callerSecret)
	cannotReadSecrets(t, u, mgmtKC)
	for _, tc := range []struct {
		args []string
		user string
	}{{nil, "clusterUser"}, {[]string{"--admin"}, "clusterAdmin"}} {
		kc := filepath.Join(t.TempDir(), "prod.kubeconfig")
		u.drover(0, append([]string{"cluster", "kubeconfig", name, "--endpoint", sim.URL(), "-o", kc}, tc.args...)...)
		if got := u.whoami(kc); got != tc.user {
			t.Errorf("kubeconfig %v: authenticated as %q, want %q", tc.args, got, tc.user)
		}
	}

	wantError(t, "a service principal without access to the subscription",
		env(otherID, otherSecret).run(filepath.Join(droverDir, "drover"), "cluster", "kubeconfig", name, "--endpoint", sim.URL()),
		"listClusterUserCredential", "AuthorizationFailed", otherID)
	wantError(t, "kubeconfig without Azure credentials",
		env("", "").run(filepath.Join(droverDir, "drover"), "cluster", "kubeconfig", name, "--endpoint", sim.URL()),
		"no Azure credentials", "AZURE_CLIENT_ID", "az login")
}
