package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// pki is the set of keys and certificates of one control plane. It is generated once into
// <data-dir>/pki and reused on restart, so kubeconfigs handed out earlier stay valid; ensure renews
// what is close to expiry (see renewalDue).
type pki struct {
	dir string
	// leafValidity and caValidity are the lifetimes of newly issued certificates; zero means
	// defaultLeafValidity and defaultCAValidity. Tests shorten them.
	leafValidity, caValidity time.Duration
	// apiServerIPs are extra IP addresses the API server's certificate names (the advertise
	// address).
	apiServerIPs []net.IP
}

const (
	defaultLeafValidity = 365 * 24 * time.Hour
	defaultCAValidity   = 10 * defaultLeafValidity
	// backdate covers clocks of the children that lag drover's a little.
	backdate = time.Hour
)

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// renewalDue reports whether cert has less than a third of its lifetime left (about 4 months
// for a leaf, 3 years for the CA): renewed on one of the next starts, long before it expires.
func renewalDue(cert *x509.Certificate, now time.Time) bool {
	return cert.NotAfter.Sub(now) < cert.NotAfter.Sub(cert.NotBefore)/3
}

// leafTemplates are the certificates the CA signs: the API server's serving certificate and the
// client certificates of drover's admin kubeconfig and of the other components.
func leafTemplates(apiServerIPs []net.IP) map[string]*x509.Certificate {
	client := func(subject pkix.Name) *x509.Certificate {
		return &x509.Certificate{Subject: subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	return map[string]*x509.Certificate{
		"apiserver": {
			Subject:     pkix.Name{CommonName: "kube-apiserver"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPAddresses: append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 96, 0, 1)}, apiServerIPs...),
		},
		"admin":                   client(pkix.Name{CommonName: "drover-admin", Organization: []string{"system:masters"}}),
		"kube-controller-manager": client(pkix.Name{CommonName: "system:kube-controller-manager"}),
		"kube-scheduler":          client(pkix.Name{CommonName: "system:kube-scheduler"}),
		"kwok":                    client(pkix.Name{CommonName: "drover-kwok", Organization: []string{"system:masters"}}),
	}
}

// ensure creates whatever is missing (CA, serving cert, client certs, service-account key) and
// renews certificates on start, since the children read them only then:
//   - the CA when renewalDue: re-signed with its own key and subject, so trust bundles handed
//     out earlier (kubeconfigs, agents) keep verifying the server until the old CA expires;
//   - a leaf when renewalDue, when its key is missing or does not match, when it no longer
//     verifies against the CA (the CA was replaced), or when the CA was renewed.
//
// A valid certificate is left as it is. It returns the names of the certificates it (re)issued
// over existing ones.
func (p pki) ensure() (renewed []string, err error) {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	now := time.Now()
	caCert, caKey, caChanged := (*x509.Certificate)(nil), crypto.Signer(nil), false
	if !exists(p.path("ca.crt")) || !exists(p.path("ca.key")) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generate CA key: %w", err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("marshal CA key: %w", err)
		}
		if err := writePEM(p.path("ca.key"), "EC PRIVATE KEY", keyDER, 0o600); err != nil {
			return nil, err
		}
		if caCert, err = p.writeCA(key, now); err != nil {
			return nil, err
		}
		caKey, caChanged = key, true
	} else {
		if caCert, caKey, err = p.loadCA(); err != nil {
			return nil, err
		}
		if renewalDue(caCert, now) {
			if caCert, err = p.writeCA(caKey, now); err != nil {
				return nil, err
			}
			caChanged = true
			renewed = append(renewed, "ca")
		}
	}
	templates := leafTemplates(p.apiServerIPs)
	names := make([]string, 0, len(templates))
	for name := range templates {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		crt, key := p.path(name+".crt"), p.path(name+".key")
		existed := exists(crt)
		if existed && !caChanged {
			// Go 1.23+ parses the leaf; a key that is missing or does not match fails here.
			pair, err := tls.LoadX509KeyPair(crt, key)
			if err == nil && pair.Leaf.CheckSignatureFrom(caCert) == nil && !renewalDue(pair.Leaf, now) && namesIPs(pair.Leaf, templates[name].IPAddresses) {
				continue
			}
		}
		if err := p.writeLeaf(name, templates[name], caCert, caKey, now); err != nil {
			return nil, err
		}
		if existed {
			renewed = append(renewed, name)
		}
	}
	if !exists(p.path("sa.key")) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, fmt.Errorf("generate service-account key: %w", err)
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("marshal service-account public key: %w", err)
		}
		if err := writePEM(p.path("sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
			return nil, err
		}
		if err := writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), 0o600); err != nil {
			return nil, err
		}
	}
	return renewed, nil
}

// writeCA (re)issues the self-signed CA certificate for key. Keeping the subject and key on a
// renewal keeps the subject key ID, so certificates signed under the old CA certificate verify
// against the new one and the other way round.
func (p pki) writeCA(key crypto.Signer, now time.Time) (*x509.Certificate, error) {
	validity := p.caValidity
	if validity == 0 {
		validity = defaultCAValidity
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "drover-embedded-ca"},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return cert, writePEM(p.path("ca.crt"), "CERTIFICATE", der, 0o644)
}

func (p pki) loadCA() (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return nil, nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(p.path("ca.key"))
	if err != nil {
		return nil, nil, fmt.Errorf("read CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("CA certificate or key in the pki dir is not PEM: remove the pki dir to regenerate it")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA key: %w", err)
	}
	return cert, key, nil
}

func (p pki) writeLeaf(name string, tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	validity := p.leafValidity
	if validity == 0 {
		validity = defaultLeafValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate %s key: %w", name, err)
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = now.Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("create %s certificate: %w", name, err)
	}
	return writeKeyPair(p.path(name), der, key)
}

func writeKeyPair(base string, certDER []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	if err := writePEM(base+".key", "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(base+".crt", "CERTIFICATE", certDER, 0o644)
}

// writePEM replaces path atomically, so a crash leaves the old file or the new one, never half.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// namesIPs: cert names every IP of ips (an advertise address added since it was issued is not).
func namesIPs(cert *x509.Certificate, ips []net.IP) bool {
	for _, ip := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}
