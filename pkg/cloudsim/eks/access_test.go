package eks_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/droverhq/drover/internal/hosted/access"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

const (
	otherKey    = "AKIATESTDROVER000002"
	otherSecret = "other-secret-key"
	otherARN    = "arn:aws:iam::123456789012:user/alice"
)

// authEnv is a simulator on a manual clock that starts at the wall clock (EKS tokens are signed
// with the wall clock), with two keys and a backend serving every cluster created.
type authEnv struct {
	*env
	backend *simcore.Backend
}

func newAuthEnv(t *testing.T) *authEnv {
	t.Helper()
	b := &simcore.Backend{Name: "one", Endpoint: "https://127.0.0.1:6443", CAPEM: []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")}
	clock := simcore.NewManualClock(time.Now())
	srv, ts := eksim.NewTestServer(t, eksim.Options{
		Credentials: map[string]string{accessKey: secretKey, otherKey: otherSecret},
		Principals:  map[string]string{otherKey: otherARN},
		Delay:       delay, Clock: clock, Backend: b,
	})
	return &authEnv{env: &env{srv: srv, url: ts.URL, clock: clock, client: eksim.NewClient(ts.URL, region, accessKey, secretKey)}, backend: b}
}

func awsConfig(ak, sk string) aws.Config {
	return aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(ak, sk, "")}
}

func (e *authEnv) createActive(t *testing.T, name string, bootstrap *bool) {
	t.Helper()
	in := &awseks.CreateClusterInput{
		Name: aws.String(name), RoleArn: aws.String(roleARN),
		ResourcesVpcConfig: &types.VpcConfigRequest{SubnetIds: subnets},
	}
	if bootstrap != nil {
		in.AccessConfig = &types.CreateAccessConfigRequest{BootstrapClusterCreatorAdminPermissions: bootstrap}
	}
	if _, err := e.client.CreateCluster(t.Context(), in); err != nil {
		t.Fatalf("CreateCluster %s: %v", name, err)
	}
	e.settle()
}

// review posts a TokenReview for token to the simulator's webhook path of backend.
func (e *authEnv) review(t *testing.T, backend, token string) (bool, string, []string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": token}})
	resp, err := http.Post(e.url+simcore.TokenReviewPath(backend), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Status struct {
			Authenticated bool
			User          struct {
				Username string
				Groups   []string
			}
			Error string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("TokenReview: status %d, decode error %v", resp.StatusCode, err)
	}
	return out.Status.Authenticated, out.Status.User.Username, out.Status.User.Groups, out.Status.Error
}

func TestAccessEntriesThroughSDK(t *testing.T) {
	e := newAuthEnv(t)
	ctx := t.Context()
	e.createActive(t, "prod", nil)
	creator := "arn:aws:iam::123456789012:user/" + accessKey

	d, err := e.client.DescribeAccessEntry(ctx, &awseks.DescribeAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(creator)})
	if err != nil {
		t.Fatalf("the creator has no access entry: %v", err)
	}
	if aws.ToString(d.AccessEntry.Username) != creator || aws.ToString(d.AccessEntry.Type) != "STANDARD" {
		t.Errorf("creator entry = %+v", d.AccessEntry)
	}
	pols, err := e.client.ListAssociatedAccessPolicies(ctx, &awseks.ListAssociatedAccessPoliciesInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(creator)})
	if err != nil || len(pols.AssociatedAccessPolicies) != 1 || aws.ToString(pols.AssociatedAccessPolicies[0].PolicyArn) != eksim.ClusterAdminPolicy ||
		pols.AssociatedAccessPolicies[0].AccessScope.Type != types.AccessScopeTypeCluster {
		t.Fatalf("creator policies = %+v, %v", pols, err)
	}
	desc := e.describe(t, "prod")
	if desc.AccessConfig == nil || !aws.ToBool(desc.AccessConfig.BootstrapClusterCreatorAdminPermissions) || desc.AccessConfig.AuthenticationMode != types.AuthenticationModeApiAndConfigMap {
		t.Errorf("accessConfig = %+v", desc.AccessConfig)
	}

	c, err := e.client.CreateAccessEntry(ctx, &awseks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(otherARN), KubernetesGroups: []string{"viewers"}})
	if err != nil {
		t.Fatalf("CreateAccessEntry: %v", err)
	}
	if got := c.AccessEntry; aws.ToString(got.Username) != otherARN || len(got.KubernetesGroups) != 1 || !strings.Contains(aws.ToString(got.AccessEntryArn), ":access-entry/prod/user/") {
		t.Errorf("created entry = %+v", got)
	}
	_, err = e.client.CreateAccessEntry(ctx, &awseks.CreateAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(otherARN)})
	wantAPIError(t, err, "ResourceInUseException")
	if _, err := e.client.AssociateAccessPolicy(ctx, &awseks.AssociateAccessPolicyInput{
		ClusterName: aws.String("prod"), PrincipalArn: aws.String(otherARN), PolicyArn: aws.String(eksim.ViewPolicy),
		AccessScope: &types.AccessScope{Type: types.AccessScopeTypeNamespace, Namespaces: []string{"apps"}},
	}); err != nil {
		t.Fatalf("AssociateAccessPolicy: %v", err)
	}
	l, err := e.client.ListAccessEntries(ctx, &awseks.ListAccessEntriesInput{ClusterName: aws.String("prod")})
	if err != nil || strings.Join(l.AccessEntries, ",") != creator+","+otherARN {
		t.Fatalf("ListAccessEntries = %v, %v", l.AccessEntries, err)
	}
	l, err = e.client.ListAccessEntries(ctx, &awseks.ListAccessEntriesInput{ClusterName: aws.String("prod"), AssociatedPolicyArn: aws.String(eksim.ViewPolicy)})
	if err != nil || strings.Join(l.AccessEntries, ",") != otherARN {
		t.Fatalf("ListAccessEntries by policy = %v, %v", l.AccessEntries, err)
	}
	if _, err := e.client.DeleteAccessEntry(ctx, &awseks.DeleteAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(otherARN)}); err != nil {
		t.Fatalf("DeleteAccessEntry: %v", err)
	}
	_, err = e.client.DescribeAccessEntry(ctx, &awseks.DescribeAccessEntryInput{ClusterName: aws.String("prod"), PrincipalArn: aws.String(otherARN)})
	wantAPIError(t, err, "ResourceNotFoundException")

	e.createActive(t, "nobootstrap", aws.Bool(false))
	l, err = e.client.ListAccessEntries(ctx, &awseks.ListAccessEntriesInput{ClusterName: aws.String("nobootstrap")})
	if err != nil || len(l.AccessEntries) != 0 {
		t.Fatalf("bootstrapClusterCreatorAdminPermissions=false: entries %v, %v", l.AccessEntries, err)
	}
}

func TestGetCallerIdentity(t *testing.T) {
	e := newAuthEnv(t)
	for _, tc := range []struct {
		name, ak, sk, want string
	}{
		{"creator key", accessKey, secretKey, "arn:aws:iam::123456789012:user/" + accessKey},
		{"mapped principal", otherKey, otherSecret, otherARN},
		{"wrong secret", accessKey, "nope", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := sts.NewFromConfig(awsConfig(tc.ak, tc.sk), func(o *sts.Options) { o.BaseEndpoint = aws.String(e.url) })
			out, err := client.GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
			if tc.want == "" {
				if err == nil {
					t.Fatalf("GetCallerIdentity with a wrong secret succeeded as %s", aws.ToString(out.Arn))
				}
				return
			}
			if err != nil {
				t.Fatalf("GetCallerIdentity: %v", err)
			}
			if aws.ToString(out.Arn) != tc.want || aws.ToString(out.Account) != eksim.DefaultAccountID {
				t.Errorf("GetCallerIdentity = %s in %s, want %s", aws.ToString(out.Arn), aws.ToString(out.Account), tc.want)
			}
		})
	}
}

func TestPresignedGetCallerIdentity(t *testing.T) {
	e := newAuthEnv(t)
	tok, _, err := access.EKSToken(t.Context(), awsConfig(accessKey, secretKey), e.url, "prod")
	if err != nil {
		t.Fatal(err)
	}
	u := presignedURL(t, tok)
	if !strings.Contains(u, "X-Amz-Expires=60") || !strings.Contains(u, "x-k8s-aws-id") {
		t.Fatalf("presigned URL lacks X-Amz-Expires=60 or the signed x-k8s-aws-id header")
	}
	get := func(cluster string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		req.Header.Set("x-k8s-aws-id", cluster)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("prod"); c != http.StatusOK {
		t.Errorf("presigned GetCallerIdentity with the signed cluster: %d", c)
	}
	if c := get("staging"); c != http.StatusForbidden {
		t.Errorf("presigned GetCallerIdentity with another cluster header: %d, want 403", c)
	}
	e.clock.Advance(eksim.TokenLifetime + time.Second)
	if c := get("prod"); c != http.StatusForbidden {
		t.Errorf("presigned GetCallerIdentity 15 min later: %d, want 403", c)
	}
}

func presignedURL(t *testing.T, tok string) string {
	t.Helper()
	raw, ok := strings.CutPrefix(tok, eksim.TokenPrefix)
	if !ok || strings.HasSuffix(raw, "=") {
		t.Fatalf("token is not k8s-aws-v1. + unpadded base64url")
	}
	b, err := base64RawURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEKSTokenReview(t *testing.T) {
	e := newAuthEnv(t)
	ctx := t.Context()
	e.createActive(t, "a", nil)
	e.createActive(t, "b", nil)
	if err := e.srv.SetBackend(region, "b", &simcore.Backend{Name: "two", Endpoint: "https://127.0.0.1:7443"}); err != nil {
		t.Fatal(err)
	}
	creator := "arn:aws:iam::123456789012:user/" + accessKey
	token := func(ak, sk, cluster string) string {
		tok, exp, err := access.EKSToken(ctx, awsConfig(ak, sk), e.url, cluster)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(exp); d < 14*time.Minute || d > 15*time.Minute {
			t.Fatalf("token expiry in %v, want 15 min", d)
		}
		return tok
	}
	tokA := token(accessKey, secretKey, "a")

	ok, user, groups, _ := e.review(t, "one", tokA)
	if !ok || user != creator || !strings.Contains(strings.Join(groups, ","), eksim.MastersGroup) {
		t.Fatalf("creator's token for a on its backend: authenticated=%v user=%s groups=%v", ok, user, groups)
	}
	forged := tokA[:len(tokA)-8] + strings.Repeat("A", 8)
	for _, tc := range []struct {
		name, backend, token, why string
	}{
		{"token for a on b's backend", "two", tokA, "signature does not match"},
		{"forged", "one", forged, ""},
		{"not an EKS token", "one", "ya29.something", "no kind"},
		{"key without access entry", "one", token(otherKey, otherSecret, "a"), "no access entry"},
		{"unknown key", "one", token("AKIAUNKNOWN000000000", "x", "a"), "InvalidClientTokenId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, _, _, why := e.review(t, tc.backend, tc.token)
			if ok || !strings.Contains(why, tc.why) {
				t.Fatalf("authenticated=%v, reason %q, want refused with %q", ok, why, tc.why)
			}
			if secret := strings.TrimPrefix(tc.token, eksim.TokenPrefix); len(secret) > 20 && strings.Contains(why, secret[:20]) {
				t.Fatalf("the refusal quotes the token")
			}
		})
	}

	if _, err := e.client.CreateAccessEntry(ctx, &awseks.CreateAccessEntryInput{ClusterName: aws.String("a"), PrincipalArn: aws.String(otherARN), KubernetesGroups: []string{"viewers"}}); err != nil {
		t.Fatal(err)
	}
	ok, user, groups, why := e.review(t, "one", token(otherKey, otherSecret, "a"))
	if !ok || user != otherARN || strings.Join(groups, ",") != "viewers" {
		t.Fatalf("after CreateAccessEntry: authenticated=%v user=%s groups=%v (%s)", ok, user, groups, why)
	}

	e.clock.Advance(eksim.TokenLifetime + time.Second)
	if ok, _, _, why := e.review(t, "one", tokA); ok || !strings.Contains(why, "expired") {
		t.Fatalf("a 15-minute-old token: authenticated=%v, reason %q", ok, why)
	}
}

func base64RawURL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
