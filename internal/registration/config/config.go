// Package config reads drover's registration settings: the management API server URL and CA
// that agents are given. They live in a ConfigMap that controllers watch; a change re-reconciles
// tokens and redeploys imported agents.
package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults for the ConfigMap holding the settings.
const (
	DefaultNamespace = "drover-system"
	DefaultName      = "drover-registration"
	KeyAPIServerURL  = "apiServerURL"
	KeyAPIServerCA   = "apiServerCA"
)

// Ref names the ConfigMap.
type Ref struct{ Namespace, Name string }

// DefaultRef is drover-system/drover-registration.
var DefaultRef = Ref{Namespace: DefaultNamespace, Name: DefaultName}

// Config is the registration settings.
type Config struct {
	APIServerURL string
	APIServerCA  []byte // PEM
}

// Get reads the settings; a missing ConfigMap gives empty settings (the caller reports what is
// missing where it matters).
func Get(ctx context.Context, r client.Reader, ref Ref) (Config, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Config{}, nil
		}
		return Config{}, fmt.Errorf("get registration config %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return Config{APIServerURL: cm.Data[KeyAPIServerURL], APIServerCA: []byte(cm.Data[KeyAPIServerCA])}, nil
}

// CAHash is the hex sha256 of a CA bundle ("" for none).
func CAHash(ca []byte) string {
	if len(ca) == 0 {
		return ""
	}
	sum := sha256.Sum256(ca)
	return hex.EncodeToString(sum[:])
}

// MissingURLMessage is the message of a MissingAPIServerURL condition: it names the setting to
// set, for each way of running drover.
func MissingURLMessage(ref Ref) string {
	return fmt.Sprintf("No management API URL for agents: run drover server with --api-server-url=URL (and --api-server-ca=FILE), "+
		"or with Helm set apiServerURL (and apiServerCA) in charts/drover's values; it writes %s in ConfigMap %s/%s",
		KeyAPIServerURL, ref.Namespace, ref.Name)
}
