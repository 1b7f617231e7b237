package integration

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/utils/ptr"
)

func tokenRequest() *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
}
