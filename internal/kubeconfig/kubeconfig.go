// Package kubeconfig turns a kubeconfig that someone else wrote — a Secret a user points a fleet
// Cluster or a migration at — into a client config drover can use without trusting its author
// with drover's own process.
//
// client-go would honour everything a kubeconfig may say, and several of those things act on
// the machine that loads it: an exec plugin or auth provider runs a command or loads code there,
// and tokenFile, client-certificate, client-key and certificate-authority read its files. In
// drover's pod those files include its ServiceAccount token, so a kubeconfig with `tokenFile:
// /var/run/secrets/kubernetes.io/serviceaccount/token` and a server of the author's choosing
// would hand them drover's identity; an exec plugin would run their command as drover. Anyone
// allowed to create a Secret and a Cluster in a workspace could do either. FromSecret refuses
// such kubeconfigs with a message naming the field; only inline data (token, certificates,
// basic auth) is used.
package kubeconfig

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrInvalid wraps every refusal of FromSecret.
var ErrInvalid = errors.New("invalid kubeconfig")

// FromSecret is the client config of data's current context. It never quotes data in an error:
// a parser's error may quote the document, credentials included, and these errors end up in
// status conditions.
func FromSecret(data []byte) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: it is empty", ErrInvalid)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%w: it does not parse as a kubeconfig (YAML or JSON)", ErrInvalid)
	}
	name := cfg.CurrentContext
	kctx := cfg.Contexts[name]
	if name == "" || kctx == nil {
		return nil, fmt.Errorf("%w: it has no current-context naming one of its contexts", ErrInvalid)
	}
	cl, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
	if cl == nil || cl.Server == "" {
		return nil, fmt.Errorf("%w: context %q has no cluster with a server URL", ErrInvalid, name)
	}
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
	}
	if err := refuseLocal(kctx.Cluster, cl, kctx.AuthInfo, user); err != nil {
		return nil, err
	}
	// Only the current context, so nothing else in the document is even looked at.
	only := clientcmdapi.NewConfig()
	only.Clusters[kctx.Cluster], only.AuthInfos[kctx.AuthInfo] = cl, user
	only.Contexts[name], only.CurrentContext = kctx, name
	rc, err := clientcmd.NewDefaultClientConfig(*only, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: context %q: %w", ErrInvalid, name, err)
	}
	return rc, nil
}

// refuseLocal refuses what would make drover run a command or read its own files.
func refuseLocal(clusterName string, cl *clientcmdapi.Cluster, userName string, user *clientcmdapi.AuthInfo) error {
	const inline = "; drover uses only credentials written in the kubeconfig itself (token, client-certificate-data and client-key-data, certificate-authority-data)"
	switch {
	case user.Exec != nil:
		return fmt.Errorf("%w: user %q gets its credentials by running a command (exec: %q), which drover does not run for a kubeconfig it did not write%s", ErrInvalid, userName, user.Exec.Command, inline)
	case user.AuthProvider != nil:
		return fmt.Errorf("%w: user %q uses auth-provider %q, which drover does not load%s", ErrInvalid, userName, user.AuthProvider.Name, inline)
	case user.TokenFile != "":
		return fmt.Errorf("%w: user %q reads its token from a file (tokenFile), which would be a file of drover's own%s", ErrInvalid, userName, inline)
	case user.ClientCertificate != "" || user.ClientKey != "":
		return fmt.Errorf("%w: user %q reads its client certificate or key from a file (client-certificate, client-key), which would be a file of drover's own%s", ErrInvalid, userName, inline)
	case cl.CertificateAuthority != "":
		return fmt.Errorf("%w: cluster %q reads its CA from a file (certificate-authority), which would be a file of drover's own%s", ErrInvalid, clusterName, inline)
	}
	return nil
}
