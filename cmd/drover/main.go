// Command drover is a Kubernetes-native control plane for fleets of clusters.
package main

import (
	"os"

	// drover's image has no OS files: these roots verify cloud APIs (EKS, AKS, GKE) when the
	// system has no CA bundle; a mounted /etc/ssl/certs still wins.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/droverhq/drover/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
