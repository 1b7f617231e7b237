package envtest

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TokenConfig returns a config for the ServiceAccount ns/name with a token from the TokenRequest
// API, valid for ttl (the API server may raise it to its minimum of 10 minutes).
func TokenConfig(ctx context.Context, cs kubernetes.Interface, base *rest.Config, ns, name string, ttl time.Duration) (*rest.Config, error) {
	secs := int64(ttl / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for %s/%s: %w", ns, name, err)
	}
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}
