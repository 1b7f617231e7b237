package eks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/access"
)

// awsConfig is the AWS config of a credential Secret (Connect has checked its keys).
func (p Provider) awsConfig(c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) aws.Config {
	cfg := aws.Config{
		Region:      c.Spec.EKSConfig.Region,
		Credentials: credentials.NewStaticCredentialsProvider(string(s.Data[KeyAccessKeyID]), string(s.Data[KeySecretAccessKey]), string(s.Data[KeySessionToken])),
		HTTPClient:  &http.Client{Transport: transport, Timeout: hosted.RequestTimeout},
	}
	if transport == nil {
		cfg.HTTPClient = &http.Client{Transport: hosted.SharedTransport(), Timeout: hosted.RequestTimeout}
	}
	if p.RetryMaxAttempts > 0 {
		cfg.RetryMaxAttempts = p.RetryMaxAttempts
	}
	return cfg
}

// Access returns credentials for the cluster's Kubernetes API, the EKS way: endpoint and CA
// from DescribeCluster, and a bearer token (a presigned STS GetCallerIdentity for the cluster)
// signed with the credential Secret's key — the principal drover manages the cluster as. The
// Secret's endpoint, when set, serves STS too (as the simulator does).
func (p Provider) Access(ctx context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (*access.Credentials, error) {
	sess, err := p.Connect(ctx, c, s, transport)
	if err != nil {
		return nil, err
	}
	creds, err := access.EKS(ctx, sess.(*session).api, p.awsConfig(c, s, transport), strings.TrimSpace(string(s.Data[KeyEndpoint])), c.Spec.EKSConfig.DisplayName)
	if err != nil {
		return nil, classifyAccess(err)
	}
	return creds, nil
}

// classifyAccess keeps access's own kinds (not ready, private endpoint) and classifies SDK
// errors like every other call.
func classifyAccess(err error) error {
	if errors.Is(err, access.ErrNotReady) || errors.Is(err, access.ErrEndpointPrivate) {
		return err
	}
	return classify("DescribeCluster", err)
}

// MissingAccess says which access entry the cluster lacks for drover to reach its Kubernetes
// API: the IAM principal of the credential Secret's key (STS GetCallerIdentity), when the
// cluster has no access entry for it (DescribeAccessEntry answers ResourceNotFound). Empty:
// the entry exists.
func (p Provider) MissingAccess(ctx context.Context, c *v1.Cluster, s *corev1.Secret, transport hosted.Transport) (string, error) {
	cfg := p.awsConfig(c, s, transport)
	endpoint := strings.TrimSpace(string(s.Data[KeyEndpoint]))
	id, err := sts.NewFromConfig(cfg, func(o *sts.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", classify("GetCallerIdentity", err)
	}
	principal := aws.ToString(id.Arn)
	sess, err := p.Connect(ctx, c, s, transport)
	if err != nil {
		return "", err
	}
	api, ok := sess.(*session).api.(interface {
		DescribeAccessEntry(context.Context, *awseks.DescribeAccessEntryInput, ...func(*awseks.Options)) (*awseks.DescribeAccessEntryOutput, error)
	})
	if !ok {
		return "", fmt.Errorf("the EKS client cannot describe access entries")
	}
	_, err = api.DescribeAccessEntry(ctx, &awseks.DescribeAccessEntryInput{ClusterName: aws.String(c.Spec.EKSConfig.DisplayName), PrincipalArn: aws.String(principal)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return principal, nil
	case err != nil:
		return "", classify("DescribeAccessEntry", err)
	}
	return "", nil
}
