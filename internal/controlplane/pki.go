package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the set of keys and certificates of one control plane. It is generated once into
// <data-dir>/pki and reused on restart, so kubeconfigs handed out earlier stay valid.
type pki struct {
	dir string
}

const certValidity = 365 * 24 * time.Hour

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// ensure creates whatever is missing: CA, serving cert, client certs and the service-account key.
func (p pki) ensure() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create pki dir: %w", err)
	}
	if !exists(p.path("ca.crt")) || !exists(p.path("ca.key")) {
		if err := p.writeCA(); err != nil {
			return err
		}
	}
	caCert, caKey, err := p.loadCA()
	if err != nil {
		return err
	}
	if !exists(p.path("apiserver.crt")) {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-apiserver"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 96, 0, 1)},
		}
		if err := p.writeLeaf("apiserver", tmpl, caCert, caKey); err != nil {
			return err
		}
	}
	clients := map[string]pkix.Name{
		"admin":                   {CommonName: "drover-admin", Organization: []string{"system:masters"}},
		"kube-controller-manager": {CommonName: "system:kube-controller-manager"},
		"kube-scheduler":          {CommonName: "system:kube-scheduler"},
		"kwok":                    {CommonName: "drover-kwok", Organization: []string{"system:masters"}},
	}
	for name, subject := range clients {
		if exists(p.path(name + ".crt")) {
			continue
		}
		tmpl := &x509.Certificate{Subject: subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if err := p.writeLeaf(name, tmpl, caCert, caKey); err != nil {
			return err
		}
	}
	if !exists(p.path("sa.key")) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return fmt.Errorf("generate service-account key: %w", err)
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return fmt.Errorf("marshal service-account public key: %w", err)
		}
		if err := writePEM(p.path("sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
			return err
		}
		if err := writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (p pki) writeCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "drover-embedded-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("create CA certificate: %w", err)
	}
	return writeKeyPair(p.path("ca"), der, key)
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

func (p pki) writeLeaf(name string, tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate %s key: %w", name, err)
	}
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(certValidity)
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

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
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
