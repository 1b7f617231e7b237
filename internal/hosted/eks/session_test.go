package eks

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/droverhq/drover/internal/hosted"
)

// TestClassifyCredentialFailure: a credential refusal is ErrCredentials with the AWS code and
// message (stable, one line) and the Secret key it points at.
func TestClassifyCredentialFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, code, msg, want string
	}{
		{"wrong secret access key", "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Consult the service documentation for details.",
			"InvalidSignatureException: The request signature we calculated does not match the signature you provided. Consult the service documentation for details. Check the Secret's key secretAccessKey."},
		{"unknown access key", "UnrecognizedClientException", "The security token included in the request is invalid",
			"UnrecognizedClientException: The security token included in the request is invalid. Check the Secret's key accessKeyID."},
		{"no permission", "AccessDeniedException", "User: arn:aws:iam::1:user/x is not authorized to perform: eks:DescribeCluster",
			"AccessDeniedException: User: arn:aws:iam::1:user/x is not authorized to perform: eks:DescribeCluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := classify("DescribeCluster", fmt.Errorf("operation error EKS: DescribeCluster, https response error StatusCode: 403, RequestID: 1234-abcd, %w", &smithy.GenericAPIError{Code: tt.code, Message: tt.msg}))
			if !errors.Is(err, hosted.ErrCredentials) {
				t.Fatalf("not ErrCredentials: %v", err)
			}
			if got := hosted.StableMessage(err); got != tt.want {
				t.Errorf("message\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
