//go:build unix

package eks_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/hosted/access"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// BenchmarkReviewToken reviews valid EKS tokens of random clusters of a backend that serves n
// of them, as the webhook of a downstream API server shared by n simulated clusters does. An
// EKS token does not say which cluster it is for (the x-k8s-aws-id header is signed but not in
// the URL), so the simulator must find the cluster the signature matches.
func BenchmarkReviewToken(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			clock := simcore.NewManualClock(time.Now())
			srv := eksim.New(eksim.Options{Credentials: map[string]string{accessKey: secretKey}, Delay: delay, Clock: clock,
				Backend: &simcore.Backend{Name: "one", Endpoint: "https://127.0.0.1:6443"}})
			createFleet(b, srv, n)
			clock.Advance(2 * delay)
			tokens := make([]string, 64)
			for i := range tokens {
				tok, _, err := access.EKSToken(b.Context(), awsConfig(accessKey, secretKey), "https://sts.local", fmt.Sprintf("c-%05d", (i*7919)%n))
				if err != nil {
					b.Fatal(err)
				}
				tokens[i] = tok
			}
			runtime.GC()
			start, i := cpuTime(), 0
			for b.Loop() {
				if u, ok, why := srv.ReviewToken("one", tokens[i%len(tokens)]); !ok || u.Username == "" {
					b.Fatalf("token %d refused: %s", i, why)
				}
				i++
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(i), "cpu-µs/op")
		})
	}
}
