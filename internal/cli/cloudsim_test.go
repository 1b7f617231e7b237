package cli

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	"google.golang.org/api/container/v1"
	"google.golang.org/api/option"

	"github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/test/envtest"
)

// TestCloudsimServesTheSDKs runs `drover cloudsim` and uses what it prints to point the
// unmodified SDKs at it.
func TestCloudsimServesTheSDKs(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	out := &envtest.SyncBuffer{}
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"cloudsim", "--listen", "127.0.0.1:0", "--eks", "--gke", "--delay", "10ms", "--dir", t.TempDir()})
	cmd.SetOut(out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var eksURL, gkeURL, keyFile string
	deadline := time.Now().Add(10 * time.Second)
	for eksURL == "" || keyFile == "" {
		if time.Now().After(deadline) {
			t.Fatalf("cloudsim did not print its endpoints:\n%s", out)
		}
		s := out.String()
		if m := regexp.MustCompile(`EKS simulator: (\S+)`).FindStringSubmatch(s); m != nil {
			eksURL = m[1]
		}
		if m := regexp.MustCompile(`GKE simulator \(container/v1\): (\S+)`).FindStringSubmatch(s); m != nil {
			gkeURL = m[1]
		}
		if m := regexp.MustCompile(`service-account key: (\S+)`).FindStringSubmatch(s); m != nil {
			keyFile = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The credential Secret each provider needs, ready to paste.
	for _, want := range []string{
		"--from-literal=endpoint=" + eksURL, "AWS_DEFAULT_REGION=us-west-2",
		"kubectl create secret generic gcp --from-file=serviceAccountJSON=" + keyFile + " --from-literal=endpoint=" + gkeURL,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("cloudsim output lacks %q:\n%s", want, out)
		}
	}
	ec := eks.NewClient(eksURL, "us-west-2", eks.DefaultAccessKeyID, eks.DefaultSecretAccessKey)
	if _, err := ec.ListClusters(ctx, &awseks.ListClustersInput{}); err != nil {
		t.Fatalf("EKS ListClusters against cloudsim: %v", err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := container.NewService(ctx, option.WithEndpoint(gkeURL+"/"), option.WithAuthCredentialsJSON(option.ServiceAccount, key))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gs.Projects.Locations.Clusters.List("projects/drover-sim/locations/-").Context(ctx).Do(); err != nil {
		t.Fatalf("GKE clusters.list against cloudsim: %v", err)
	}
}
