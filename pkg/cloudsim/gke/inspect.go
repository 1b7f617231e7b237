package gke

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"time"

	container "google.golang.org/api/container/v1"
)

// ClusterState is what a test sees of a cluster: a deep copy, current as of the call.
type ClusterState struct {
	Project string
	// Cluster is the cluster as clusters.get would return it.
	Cluster *container.Cluster
	// Operation is the name of the operation running on the cluster, or "".
	Operation string
}

// Cluster returns a deep copy of a cluster, with any ended operation applied.
func (s *Server) Cluster(project, location, name string) (ClusterState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupCluster(project, location, name)
	if aerr != nil {
		return ClusterState{}, false
	}
	st := ClusterState{Project: project, Cluster: &container.Cluster{}}
	if err := json.Unmarshal(rec.encoded(), st.Cluster); err != nil {
		panic("gke: decoding a cluster the simulator encoded: " + err.Error())
	}
	if rec.op != nil {
		st.Operation = rec.op.o.Name
	}
	return st, true
}

// ClusterCount returns the number of clusters in every project, applying ended deletions.
func (s *Server) ClusterCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	n := 0
	for _, ps := range s.projects {
		for _, rec := range ps.clusters {
			s.advance(rec, now)
			if !rec.gone {
				n++
			}
		}
	}
	return n
}

// Operation returns a copy of an operation, brought up to date.
func (s *Server) Operation(project, location, name string) (*container.Operation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.ops[name]
	if op == nil || !opVisible(op, project, location) {
		return nil, false
	}
	s.refresh(op)
	o := &container.Operation{}
	if err := json.Unmarshal(mustJSON(op.o), o); err != nil {
		panic("gke: decoding an operation the simulator encoded: " + err.Error())
	}
	return o, true
}

// FailNextOperation makes the next operation started on the cluster end with an error carrying
// message: a failed create leaves the cluster in ERROR, a failed update leaves it unchanged and
// RUNNING. It reports whether the cluster exists.
func (s *Server) FailNextOperation(project, location, name, message string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, aerr := s.lookupCluster(project, location, name)
	if aerr != nil {
		return false
	}
	rec.failNext = message
	return true
}

// clusterCA returns the base64 PEM CA certificate every simulated cluster reports in
// masterAuth. One self-signed certificate serves all clusters, so it costs no memory per cluster.
func (s *Server) clusterCA() string {
	s.caOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic("gke: generating the cluster CA key: " + err.Error())
		}
		now := time.Now()
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "drover gke simulator cluster CA"},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic("gke: creating the cluster CA certificate: " + err.Error())
		}
		s.caPEM = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	})
	return s.caPEM
}
