package join

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/droverhq/drover/internal/hosted"
)

// TestJoinedMessagesEndSentencesOnce: a provider message that ends in a period (AWS: "Consult
// the service documentation for details.") and one that does not both read as one sentence
// before drover's own ("details.. drover tries again" was shown).
func TestJoinedMessagesEndSentencesOnce(t *testing.T) {
	t.Parallel()
	aws := fmt.Errorf("%w: %w", hosted.ErrCredentials, &hosted.ProviderError{Op: "DescribeCluster", Code: "InvalidSignatureException",
		Message: "The request signature we calculated does not match the signature you provided. Consult the service documentation for details.", Err: errors.New("x")})
	bare := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, tt := range []struct {
		name string
		msg  string
		want string
	}{
		{"no credentials, provider message with period", msgNoCredentials(aws), "for details. drover tries again with backoff."},
		{"no credentials, message without period", msgNoCredentials(bare), "connection refused. drover tries again with backoff."},
		{"unreachable", msgUnreachable(bare), "connection refused. drover tries again in a minute."},
		{"not ready", msgNotReady(aws), "for details."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if strings.Contains(tt.msg, "..") || !strings.HasSuffix(tt.msg, tt.want) {
				t.Errorf("message %q, want it to end in %q with no double period", tt.msg, tt.want)
			}
		})
	}
}
