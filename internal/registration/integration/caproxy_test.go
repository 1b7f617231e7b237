package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// caProxy is the management API server behind a TLS endpoint whose CA can be rotated while its
// URL stays the same, as when the API server restarts with certificates from a new CA. It
// forwards requests as they are (bearer tokens included) and holds no credential of its own.
type caProxy struct {
	URL  string
	srv  *httptest.Server
	cert atomic.Pointer[tls.Certificate]
	ca   atomic.Pointer[[]byte]
}

// newCAProxy starts a proxy to upstream serving a certificate from a fresh CA.
func newCAProxy(t *testing.T, upstream *rest.Config) *caProxy {
	t.Helper()
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(upstream.CAData) {
		t.Fatal("upstream CA: no certificate")
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	rp.FlushInterval = -1 // watches stream
	p := &caProxy{srv: httptest.NewUnstartedServer(rp)}
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes that fail after a rotation
	p.rotate(t)
	// Not StartTLS: it would serve its own certificate to clients that send no SNI (IP URLs).
	p.srv.Listener = tls.NewListener(p.srv.Listener, &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.cert.Load(), nil }})
	p.srv.Start()
	p.URL = "https://" + p.srv.Listener.Addr().String()
	t.Cleanup(func() {
		p.srv.CloseClientConnections() // open watches would keep Close waiting
		p.srv.Close()
	})
	return p
}

// CA is the PEM of the CA that signed the certificate served now.
func (p *caProxy) CA() []byte { return *p.ca.Load() }

// rotate serves a certificate from a new CA from now on and drops every open connection, so
// that clients handshake again (and fail unless they trust the new CA).
func (p *caProxy) rotate(t *testing.T) []byte {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "rotating-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano() + 1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	p.cert.Store(&tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key})
	p.ca.Store(&caPEM)
	if p.URL != "" {
		p.srv.CloseClientConnections()
	}
	return caPEM
}
