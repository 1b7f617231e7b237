package eks_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/smithy-go"

	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
)

func TestCredentials(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name     string
		ak, sk   string
		wantCode string
	}{
		{name: "unknown access key", ak: "AKIAUNKNOWN000000000", sk: secretKey, wantCode: "UnrecognizedClientException"},
		{name: "wrong secret", ak: accessKey, sk: "not-the-secret", wantCode: "InvalidSignatureException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := eksim.NewClient(e.url, region, tt.ak, tt.sk)
			_, err := client.ListClusters(t.Context(), &awseks.ListClustersInput{})
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != tt.wantCode {
				t.Fatalf("ListClusters error = %v, want %s", err, tt.wantCode)
			}
			var re *awshttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusForbidden {
				t.Errorf("HTTP status of %v, want 403", err)
			}
		})
	}
	if got := e.srv.Counters().Get("ListClusters"); got != int64(len(tests)) {
		t.Errorf("ListClusters counted %d times, want %d (refused calls count too)", got, len(tests))
	}
}

// TestSignatureCoversRequest checks the raw protocol: no Authorization header, a body changed
// after signing, and a credential scoped to another service are all refused.
func TestSignatureCoversRequest(t *testing.T) {
	e := newEnv(t)
	body := []byte(`{"name":"x","roleArn":"` + roleARN + `","resourcesVpcConfig":{"subnetIds":["subnet-1"]}}`)
	tests := []struct {
		name     string
		req      func() *http.Request
		wantCode string
	}{
		{name: "no authorization", wantCode: "MissingAuthenticationTokenException", req: func() *http.Request {
			r, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/clusters", nil)
			return r
		}},
		{name: "body changed after signing", wantCode: "InvalidSignatureException", req: func() *http.Request {
			r := signedRequest(t, http.MethodPost, e.url+"/clusters", body, accessKey, secretKey, region)
			tampered := bytes.Replace(body, []byte(`"x"`), []byte(`"y"`), 1) // same length
			r.Body, r.GetBody = io.NopCloser(bytes.NewReader(tampered)), nil
			return r
		}},
		{name: "scoped to another service", wantCode: "InvalidSignatureException", req: func() *http.Request {
			r := signedRequest(t, http.MethodGet, e.url+"/clusters", nil, accessKey, secretKey, region)
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/eks/", "/ec2/", 1))
			return r
		}},
		{name: "query changed after signing", wantCode: "InvalidSignatureException", req: func() *http.Request {
			r := signedRequest(t, http.MethodGet, e.url+"/clusters?maxResults=5", nil, accessKey, secretKey, region)
			r.URL.RawQuery = "maxResults=6"
			return r
		}},
		{name: "valid", wantCode: "", req: func() *http.Request {
			return signedRequest(t, http.MethodGet, e.url+"/clusters?maxResults=5&include=all", nil, accessKey, secretKey, region)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(tt.req())
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			defer resp.Body.Close()
			if got := resp.Header.Get("X-Amzn-Errortype"); got != tt.wantCode {
				t.Fatalf("X-Amzn-ErrorType = %q (status %d), want %q", got, resp.StatusCode, tt.wantCode)
			}
			if tt.wantCode != "" && resp.StatusCode != http.StatusForbidden {
				t.Errorf("status = %d, want 403", resp.StatusCode)
			}
		})
	}
}

func TestUnknownOperation(t *testing.T) {
	e := newEnv(t)
	_, err := e.client.DescribeAddon(t.Context(), &awseks.DescribeAddonInput{ClusterName: aws.String("x"), AddonName: aws.String("vpc-cni")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnknownOperationException" {
		t.Fatalf("DescribeAddon error = %v, want UnknownOperationException", err)
	}
}
