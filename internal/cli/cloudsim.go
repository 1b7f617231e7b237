package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/pkg/cloudsim/aks"
	"github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/gke"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// Credentials the standalone simulators accept.
const (
	simAzureTenant = "00000000-0000-0000-0000-00000000d20e"
	simAzureClient = "11111111-1111-1111-1111-11111111d20e"
	simAzureSecret = "drover-aks-simulator-client-secret" //nolint:gosec // the simulator's well-known test secret
	// simAzureSub is the subscription GET /subscriptions lists (az login's default); any other
	// works too.
	simAzureSub     = "22222222-2222-2222-2222-22222222d20e"
	simGoogleEmail  = "drover@drover-sim.iam.gserviceaccount.com"
	simGoogleProjec = "drover-sim"
)

func newCloudsimCommand() *cobra.Command {
	var listen, faults, dir string
	var useEKS, useAKS, useGKE bool
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "cloudsim",
		Short: "Serve wire-compatible EKS, AKS and GKE simulators for the official SDKs (and drover)",
		Example: `  drover cloudsim --listen 127.0.0.1:4566 --eks
  drover cloudsim --listen 127.0.0.1:0 --delay 10s --faults throttle=0.3,5xx=0.05,seed=7`,
		Long: `Serve drover's cloud simulators. The unmodified AWS, Azure and Google SDKs (and the AWS
CLI) talk to them through an endpoint override. With no provider flag all three run: EKS on the
--listen port, AKS (HTTPS, with a generated CA) on the next port, GKE on the one after; port 0
picks free ports. Credentials and key files are written to --dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !useEKS && !useAKS && !useGKE {
				useEKS, useAKS, useGKE = true, true, true
			}
			fc, err := simcore.ParseFaults(faults)
			if err != nil {
				return usageErrorf("--faults: %w", err)
			}
			host, portStr, err := net.SplitHostPort(listen)
			if err != nil {
				return usageErrorf("--listen %q is not host:port (e.g. 127.0.0.1:4566): %w", listen, err)
			}
			port, err := strconv.Atoi(portStr)
			if err != nil {
				return usageErrorf("--listen %q: port must be a number", listen)
			}
			addr := func(i int) string {
				if port == 0 {
					return net.JoinHostPort(host, "0")
				}
				return net.JoinHostPort(host, strconv.Itoa(port+i))
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "drover-cloudsim-"); err != nil {
					return err
				}
			} else if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("--dir %s: %w", dir, err)
			}
			out := cmd.OutOrStdout()
			var servers []*http.Server
			serve := func(name string, l net.Listener, h http.Handler) {
				srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
				servers = append(servers, srv)
				go func() {
					if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s simulator stopped: %v\n", name, err)
					}
				}()
			}
			listenOn := func(flagDesc string, a string) (net.Listener, error) {
				l, err := net.Listen("tcp", a)
				if err != nil {
					return nil, fmt.Errorf("%s: cannot listen on %s (%w): pass another --listen", flagDesc, a, err)
				}
				return l, nil
			}
			if useEKS {
				l, err := listenOn("EKS", addr(0))
				if err != nil {
					return err
				}
				s := eks.New(eks.Options{Delay: delay, Faults: simcore.NewFaults(fc)})
				serve("EKS", l, s)
				url := "http://" + l.Addr().String()
				fmt.Fprintf(out, `EKS simulator: %s
  AWS CLI / SDK:  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_DEFAULT_REGION=us-west-2
                  aws eks list-clusters --endpoint-url %s
  drover secret:  kubectl create secret generic aws --from-literal=accessKeyID=%s \
                    --from-literal=secretAccessKey=%s --from-literal=endpoint=%s
`, url, eks.DefaultAccessKeyID, eks.DefaultSecretAccessKey, url, eks.DefaultAccessKeyID, eks.DefaultSecretAccessKey, url)
			}
			if useAKS {
				// PollRetryAfter: az (Python's azure-core) polls an operation every 30 s unless
				// Retry-After says otherwise.
				pollAfter := time.Second
				if delay > 0 && delay < pollAfter {
					pollAfter = delay
				}
				s, err := aks.New(aks.Options{Delay: delay, Faults: fc, PollRetryAfter: pollAfter, Credentials: []aks.Credential{{
					TenantID: simAzureTenant, ClientID: simAzureClient, ClientSecret: simAzureSecret, Subscriptions: []string{simAzureSub, "*"},
				}}})
				if err != nil {
					return fmt.Errorf("start AKS simulator: %w", err)
				}
				if err := s.Start(addr(1)); err != nil {
					return fmt.Errorf("AKS: cannot listen on %s (%w): pass another --listen", addr(1), err)
				}
				defer func() { _ = s.Close() }()
				caFile := filepath.Join(dir, "aks-ca.pem")
				if err := os.WriteFile(caFile, s.CAPEM(), 0o600); err != nil {
					return err
				}
				fmt.Fprintf(out, `AKS simulator (ARM + Entra ID, HTTPS): %s
  CA certificate: %s   (trust it in the SDK's transport)
  tenant %s, client %s, secret %s, any subscription (az login lists %s)
  Azure SDK: cloud.Configuration{ActiveDirectoryAuthorityHost: "%s/", ResourceManager endpoint and audience "%s"},
             azidentity DisableInstanceDiscovery: true
  az CLI:    export REQUESTS_CA_BUNDLE=%s
             az cloud register -n DroverSim --endpoint-resource-manager %s && az cloud set -n DroverSim
             az login --service-principal -u %s -p %s --tenant %s
  drover secret:  kubectl create secret generic azure --from-literal=tenantID=%s --from-literal=subscriptionID=%s \
                    --from-literal=clientID=%s --from-literal=clientSecret=%s \
                    --from-literal=authorityHost=%s/ --from-literal=resourceManagerEndpoint=%s --from-file=caPEM=%s
`, s.URL(), caFile, simAzureTenant, simAzureClient, simAzureSecret, simAzureSub, s.URL(), s.URL(),
					caFile, s.URL(), simAzureClient, simAzureSecret, simAzureTenant,
					simAzureTenant, simAzureSub, simAzureClient, simAzureSecret, s.URL(), s.URL(), caFile)
			}
			if useGKE {
				l, err := listenOn("GKE", addr(2))
				if err != nil {
					return err
				}
				s := gke.New(gke.Options{Delay: delay, Faults: simcore.NewFaults(fc)})
				url := "http://" + l.Addr().String()
				s.SetBaseURL(url)
				serve("GKE", l, s)
				key, err := s.NewServiceAccountKey(simGoogleEmail, simGoogleProjec)
				if err != nil {
					return fmt.Errorf("create GKE service-account key: %w", err)
				}
				keyFile := filepath.Join(dir, "gke-key.json")
				if err := os.WriteFile(keyFile, key, 0o600); err != nil {
					return err
				}
				fmt.Fprintf(out, `GKE simulator (container/v1): %s
  service-account key: %s (project %s; token_uri points at the simulator)
  Go SDK: container.NewService(ctx, option.WithEndpoint("%s/"), option.WithAuthCredentialsFile(option.ServiceAccount, "%s"))
  drover secret:  kubectl create secret generic gcp --from-file=serviceAccountJSON=%s --from-literal=endpoint=%s
`, url, keyFile, simGoogleProjec, url, keyFile, keyFile, url)
			}
			fmt.Fprintf(out, "Faults: %s. Ctrl-C stops.\n", orDash(faults))
			<-cmd.Context().Done()
			for _, srv := range servers {
				_ = srv.Close()
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:4566", "host:port of the first simulator; the others take the next ports (port 0: free ports)")
	f.BoolVar(&useEKS, "eks", false, "serve the EKS simulator")
	f.BoolVar(&useAKS, "aks", false, "serve the AKS simulator")
	f.BoolVar(&useGKE, "gke", false, "serve the GKE simulator")
	f.DurationVar(&delay, "delay", 2*time.Second, "how long creates, updates and deletes take")
	f.StringVar(&faults, "faults", "", "fault injection, e.g. throttle=0.3,5xx=0.05,drop=0.01,latency=20ms,seed=7")
	f.StringVar(&dir, "dir", "", "where to write the AKS CA and the GKE key (default: a new temp dir)")
	return cmd
}
