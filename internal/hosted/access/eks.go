package access

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

const (
	// EKSTokenPrefix starts every EKS bearer token.
	EKSTokenPrefix = "k8s-aws-v1."
	// EKSClusterIDHeader is the signed header that binds an EKS token to one cluster.
	EKSClusterIDHeader = "x-k8s-aws-id"
	// EKSTokenLifetime is how long EKS accepts a token after it was signed, whatever its
	// X-Amz-Expires says.
	EKSTokenLifetime = 15 * time.Minute
)

// ErrEndpointPrivate means an EKS cluster's API endpoint is private only
// (endpointPublicAccess=false): it cannot be reached from outside its VPC.
var ErrEndpointPrivate = errors.New("the cluster's API endpoint is private only (endpointPublicAccess=false)")

// EKSToken returns a bearer token for the EKS cluster called cluster, as `aws eks get-token`
// and aws-iam-authenticator make it: a GetCallerIdentity request presigned by the SDK's STS
// presign client with cfg's credentials and region, with the header x-k8s-aws-id: cluster
// signed and X-Amz-Expires=60, base64url-encoded without padding after "k8s-aws-v1.". The
// token is accepted for 15 minutes after signing: the returned expiry.
// stsEndpoint overrides the STS endpoint (empty: the region's own).
func EKSToken(ctx context.Context, cfg aws.Config, stsEndpoint, cluster string) (string, time.Time, error) {
	client := sts.NewFromConfig(cfg, func(o *sts.Options) {
		if stsEndpoint != "" {
			o.BaseEndpoint = aws.String(stsEndpoint)
		}
	})
	presigned, err := sts.NewPresignClient(client).PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(po *sts.PresignOptions) {
		po.ClientOptions = append(po.ClientOptions, func(o *sts.Options) {
			o.APIOptions = append(o.APIOptions,
				smithyhttp.SetHeaderValue(EKSClusterIDHeader, cluster),
				smithyhttp.SetHeaderValue("X-Amz-Expires", "60"))
		})
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("presigning STS GetCallerIdentity for EKS cluster %s: %w", cluster, err)
	}
	u, err := url.Parse(presigned.URL)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("presigned STS URL for EKS cluster %s does not parse", cluster)
	}
	signedAt, err := time.Parse("20060102T150405Z", u.Query().Get("X-Amz-Date"))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("presigned STS URL for EKS cluster %s has no X-Amz-Date", cluster)
	}
	return EKSTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(presigned.URL)), signedAt.Add(EKSTokenLifetime), nil
}

// EKSDescriber is the part of the eks client EKS needs; *awseks.Client implements it.
type EKSDescriber interface {
	DescribeCluster(context.Context, *awseks.DescribeClusterInput, ...func(*awseks.Options)) (*awseks.DescribeClusterOutput, error)
}

// EKS returns credentials for the EKS cluster called name: endpoint and CA from
// DescribeCluster (EKSEndpoint), and an EKSToken signed with cfg (the same config drover manages
// the cluster with).
func EKS(ctx context.Context, api EKSDescriber, cfg aws.Config, stsEndpoint, name string) (*Credentials, error) {
	host, ca, err := EKSEndpoint(ctx, api, name)
	if err != nil {
		return nil, err
	}
	tok, exp, err := EKSToken(ctx, cfg, stsEndpoint, name)
	if err != nil {
		return nil, err
	}
	return &Credentials{Host: host, CAData: ca, Token: tok, Expiry: exp}, nil
}

// EKSEndpoint returns the API server URL and the PEM of its CA of the EKS cluster called name,
// from DescribeCluster. The cluster must be ACTIVE or UPDATING; a private-only endpoint gives
// ErrEndpointPrivate.
func EKSEndpoint(ctx context.Context, api EKSDescriber, name string) (string, []byte, error) {
	out, err := api.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		return "", nil, fmt.Errorf("DescribeCluster %s: %w", name, err)
	}
	cl := out.Cluster
	if cl.Status != ekstypes.ClusterStatusActive && cl.Status != ekstypes.ClusterStatusUpdating {
		return "", nil, fmt.Errorf("EKS cluster %s is %s: %w", name, cl.Status, ErrNotReady)
	}
	if vpc := cl.ResourcesVpcConfig; vpc != nil && !vpc.EndpointPublicAccess {
		return "", nil, fmt.Errorf("EKS cluster %s: %w", name, ErrEndpointPrivate)
	}
	if aws.ToString(cl.Endpoint) == "" || cl.CertificateAuthority == nil {
		return "", nil, fmt.Errorf("EKS cluster %s: %w", name, ErrNotReady)
	}
	ca, err := base64.StdEncoding.DecodeString(aws.ToString(cl.CertificateAuthority.Data))
	if err != nil {
		return "", nil, fmt.Errorf("EKS cluster %s: certificateAuthority.data is not base64", name)
	}
	if err := checkCA(ca, "EKS cluster "+name); err != nil {
		return "", nil, err
	}
	return aws.ToString(cl.Endpoint), ca, nil
}
