package access_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth/credentials"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"github.com/aws/aws-sdk-go-v2/aws"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	container "google.golang.org/api/container/v1"
	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/droverhq/drover/internal/hosted/access"
	"github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
	"github.com/droverhq/drover/test/envtest"
)

// elsewhere is a backend no API server serves: a cluster pointed at it is "another cluster".
var elsewhere = &simcore.Backend{Name: "elsewhere", Endpoint: "https://127.0.0.1:1"}

// whoAmI asks the downstream API server who the credentials authenticate as
// (SelfSubjectReview, through the token webhook), then lists namespaces (RBAC).
func whoAmI(ctx context.Context, cfg *rest.Config) (authnv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authnv1.UserInfo{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, err
	}
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return authnv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// eventuallyUnauthorized is wantUnauthorized for a token the API server accepted before:
// kube-apiserver caches token authentications for 10 s (besides the webhook's own cache, off
// here), so the refusal comes within that.
func eventuallyUnauthorized(t *testing.T, what string, cfg *rest.Config) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		_, err := whoAmI(t.Context(), cfg)
		if apierrors.IsUnauthorized(err) {
			return nil
		}
		return fmt.Errorf("%s: got %w, want 401 Unauthorized from the API server", what, err)
	})
}

// withToken is cfg (the downstream's host and CA) presenting token.
func withToken(cfg *rest.Config, token string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.BearerToken = token
	return c
}

func wantUnauthorized(t *testing.T, what string, cfg *rest.Config) {
	t.Helper()
	_, err := whoAmI(t.Context(), cfg)
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("%s: got %v, want 401 Unauthorized from the API server", what, err)
	}
}

func TestEKSAccess(t *testing.T) {
	ctx := t.Context()
	const (
		ak, sk           = "AKIADROVERACCESS0001", "access-test-secret"
		otherAK, otherSK = "AKIADROVERACCESS0002", "access-test-other-secret"
		region           = "eu-west-1"
	)
	clock := &simcore.ShiftedClock{}
	sim := eks.New(eks.Options{Credentials: map[string]string{ak: sk, otherAK: otherSK}, Delay: -1, Clock: clock, Backend: backend})
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	register(t, sim)
	cfg := aws.Config{Region: region, Credentials: awscreds.NewStaticCredentialsProvider(ak, sk, "")}
	client := awseks.NewFromConfig(cfg, func(o *awseks.Options) { o.BaseEndpoint = aws.String(ts.URL) })
	for _, name := range []string{"a", "b"} {
		if _, err := client.CreateCluster(ctx, &awseks.CreateClusterInput{
			Name: aws.String(name), RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"),
			ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-0a1b2c3d4e5f60001"}},
		}); err != nil {
			t.Fatalf("CreateCluster %s: %v", name, err)
		}
	}
	if err := sim.SetBackend(region, "a", elsewhere); err != nil {
		t.Fatal(err)
	}

	creds, err := access.EKS(ctx, client, cfg, ts.URL, "b")
	if err != nil {
		t.Fatalf("access.EKS: %v", err)
	}
	if strings.Contains(creds.String(), creds.Token) || strings.Contains(creds.GoString(), creds.Token) {
		t.Fatal("Credentials.String shows the token")
	}
	user, err := whoAmI(ctx, creds.RESTConfig())
	if err != nil {
		t.Fatalf("the creator's EKS token on b: %v", err)
	}
	if want := sim.Principal(ak); user.Username != want {
		t.Fatalf("authenticated as %q, want the creator %q", user.Username, want)
	}

	tokA, _, err := eksToken(ctx, cfg, ts.URL, "a")
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthorized(t, "an EKS token for cluster a used on b", withToken(creds.RESTConfig(), tokA))
	wantUnauthorized(t, "a forged EKS token", withToken(creds.RESTConfig(), forgeEKS(t, creds.Token)))
	otherCfg := aws.Config{Region: region, Credentials: awscreds.NewStaticCredentialsProvider(otherAK, otherSK, "")}
	tokOther, _, err := eksToken(ctx, otherCfg, ts.URL, "b")
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthorized(t, "the token of a principal without an access entry", withToken(creds.RESTConfig(), tokOther))

	clock.Advance(access.EKSTokenLifetime + time.Second)
	eventuallyUnauthorized(t, "an EKS token signed 15 minutes ago", creds.RESTConfig())
}

var eksToken = access.EKSToken

// forgeEKS re-signs nothing: it changes the signature of a valid token's URL.
func forgeEKS(t *testing.T, token string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, access.EKSTokenPrefix))
	if err != nil {
		t.Fatal(err)
	}
	u := string(b)
	i := strings.Index(u, "X-Amz-Signature=")
	if i < 0 {
		t.Fatal("no X-Amz-Signature in the presigned URL")
	}
	sig := []byte(u[i+len("X-Amz-Signature="):])
	if sig[0] == '0' {
		sig[0] = '1'
	} else {
		sig[0] = '0'
	}
	return access.EKSTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(u[:i+len("X-Amz-Signature=")]+string(sig)))
}

func TestAKSAccess(t *testing.T) {
	ctx := t.Context()
	const (
		tenant, clientID, secret = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "access-test-secret"
		sub, rg                  = "33333333-3333-4333-8333-333333333333", "rg-access"
	)
	clock := &simcore.ShiftedClock{}
	sim := aks.NewTestServer(t, aks.Options{
		Credentials: []aks.Credential{{TenantID: tenant, ClientID: clientID, ClientSecret: secret, Subscriptions: []string{sub}}},
		Delay:       20 * time.Millisecond, Clock: clock, Backend: backend, KubeTokenLifetime: 10 * time.Minute,
	})
	register(t, sim)
	cred, err := azidentity.NewClientSecretCredential(tenant, clientID, secret, sim.CredentialOptions())
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := armcontainerservice.NewManagedClustersClient(sub, cred, &arm.ClientOptions{ClientOptions: sim.ClientOptions()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		p, err := clusters.BeginCreateOrUpdate(ctx, rg, name, aksCluster(), nil)
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	if err := sim.SetBackend(sub, rg, "a", elsewhere); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		admin bool
		user  string
	}{{false, "clusterUser"}, {true, "clusterAdmin"}} {
		creds, err := access.AKS(ctx, clusters, rg, "b", tc.admin, 5*time.Minute)
		if err != nil {
			t.Fatalf("access.AKS(admin=%v): %v", tc.admin, err)
		}
		user, err := whoAmI(ctx, creds.RESTConfig())
		if err != nil || user.Username != tc.user {
			t.Fatalf("AKS credential (admin=%v): user %q, %v; want %s", tc.admin, user.Username, err, tc.user)
		}
	}
	creds, err := access.AKS(ctx, clusters, rg, "b", false, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	credsA, err := access.AKS(ctx, clusters, rg, "a", false, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantUnauthorized(t, "cluster a's token used on b", withToken(creds.RESTConfig(), credsA.Token))
	wantUnauthorized(t, "a forged AKS token", withToken(creds.RESTConfig(), strings.Repeat("0", 64)))
	clock.Advance(10*time.Minute + time.Second)
	wantUnauthorized(t, "an expired AKS token", creds.RESTConfig())
}

func aksCluster() armcontainerservice.ManagedCluster {
	return armcontainerservice.ManagedCluster{
		Location: to.Ptr("westeurope"),
		Identity: &armcontainerservice.ManagedClusterIdentity{Type: to.Ptr(armcontainerservice.ResourceIdentityTypeSystemAssigned)},
		Properties: &armcontainerservice.ManagedClusterProperties{
			DNSPrefix: to.Ptr("access"),
			AgentPoolProfiles: []*armcontainerservice.ManagedClusterAgentPoolProfile{{
				Name: to.Ptr("system"), Count: to.Ptr[int32](1), VMSize: to.Ptr("Standard_D2s_v3"),
				Mode: to.Ptr(armcontainerservice.AgentPoolModeSystem), OSType: to.Ptr(armcontainerservice.OSTypeLinux),
				Type: to.Ptr(armcontainerservice.AgentPoolTypeVirtualMachineScaleSets),
			}},
		},
	}
}

func TestGKEAccess(t *testing.T) {
	ctx := t.Context()
	const (
		project, region = "access-test", "europe-west1"
		email           = "drover@access-test.iam.gserviceaccount.com"
	)
	clock := &simcore.ShiftedClock{}
	sim := gke.NewTestServer(t, gke.Options{Clock: clock, Delay: time.Minute, Backend: backend})
	register(t, sim)
	key, err := sim.NewServiceAccountKey(email, project)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{Scopes: []string{container.CloudPlatformScope}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, sim.ClientOptions(key)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Projects.Locations.Clusters.Create("projects/"+project+"/locations/"+region,
		&container.CreateClusterRequest{Cluster: &container.Cluster{Name: "b", InitialNodeCount: 1}}).Context(ctx).Do(); err != nil {
		t.Fatalf("clusters.create: %v", err)
	}
	clock.Advance(2 * time.Minute)

	c, err := access.GKE(ctx, svc, creds, project, region, "b")
	if err != nil {
		t.Fatalf("access.GKE: %v", err)
	}
	user, err := whoAmI(ctx, c.RESTConfig())
	if err != nil || user.Username != email {
		t.Fatalf("GKE access token: user %q, %v; want %s", user.Username, err, email)
	}
	wantUnauthorized(t, "a forged GKE token", withToken(c.RESTConfig(), "ya29.c."+strings.Repeat("x", 64)))
	clock.Advance(time.Hour)
	eventuallyUnauthorized(t, "an expired GKE token", c.RESTConfig())
}
