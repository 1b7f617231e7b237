// Command drover is a Kubernetes-native control plane for fleets of clusters.
package main

import (
	"os"

	"github.com/droverhq/drover/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
