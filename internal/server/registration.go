package server

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/controlplane"
	"github.com/droverhq/drover/internal/registration/config"
)

// endpointFieldManager owns the keys the server writes, so values a user or chart sets in other
// keys of the ConfigMap are left alone.
const endpointFieldManager = "drover-server"

// RegistrationEndpoint is the management API endpoint written for the registration controllers.
type RegistrationEndpoint struct {
	URL string
	CA  []byte // PEM
}

// PublishRegistrationEndpoint writes the non-empty fields of e into the registration ConfigMap
// (drover-system/drover-registration). With nothing set it writes nothing: tokens then report
// MissingAPIServerURL, naming the flag to set.
func PublishRegistrationEndpoint(ctx context.Context, c client.Client, e RegistrationEndpoint) error {
	if e.URL == "" && len(e.CA) == 0 {
		return nil
	}
	data := map[string]string{}
	if e.URL != "" {
		data[config.KeyAPIServerURL] = e.URL
	}
	if len(e.CA) > 0 {
		data[config.KeyAPIServerCA] = string(e.CA)
	}
	cm := corev1ac.ConfigMap(config.DefaultName, config.DefaultNamespace).WithData(data)
	if err := c.Apply(ctx, cm, client.FieldOwner(endpointFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("write registration endpoint to ConfigMap %s/%s: %w", config.DefaultNamespace, config.DefaultName, err)
	}
	return nil
}

// ReadCAFile reads a PEM CA bundle for --api-server-ca and checks that it holds a certificate.
func ReadCAFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--api-server-ca %s: %w: pass the path of the management API server's CA certificate (PEM)", path, errors.Unwrap(err))
	}
	if err := checkPEMCerts(b); err != nil {
		return nil, fmt.Errorf("--api-server-ca %s: %w", path, err)
	}
	return b, nil
}

func checkPEMCerts(b []byte) error {
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return fmt.Errorf("not a valid certificate: %w", err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate in the file")
	}
	return nil
}

// embeddedEndpoint is the embedded control plane's own URL and CA.
func embeddedEndpoint(cp *controlplane.ControlPlane) (RegistrationEndpoint, error) {
	ca, err := os.ReadFile(cp.CAFile())
	if err != nil {
		return RegistrationEndpoint{}, fmt.Errorf("read the embedded control plane's CA: %w", err)
	}
	return RegistrationEndpoint{URL: cp.AdvertisedURL(), CA: ca}, nil
}
