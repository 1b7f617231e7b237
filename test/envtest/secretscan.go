package envtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/logging"
)

// SecretScan records the credentials of every Secret that exists in a cluster at any time while
// tests run (an admin watch), and finds them afterwards in logs, Events, the statuses of drover's
// objects and other texts: secret values must never reach any of those.
type SecretScan struct {
	clusters []*Cluster
	mu       sync.Mutex
	values   map[string]string // value -> where it came from
}

// Keys whose values are credentials; Secrets also hold names, URLs, expiry times, IDs and CA
// certificates, which may be logged.
var (
	sensitiveKey = regexp.MustCompile(`(?i)token|secret|password|key|credential|kubeconfig|value|config|json`)
	notSensitive = regexp.MustCompile(`(?i)(expiry|name|namespace|url|ca|id|endpoint)$`)
	// embedded finds the credentials inside a kubeconfig or JSON key file value.
	embedded  = regexp.MustCompile(`(?m)(?:token|client-key-data|password|access_token|client_secret)"?\s*[:=]\s*"?([A-Za-z0-9._\-+/=]{16,})`)
	pemBase64 = regexp.MustCompile(`^[A-Za-z0-9+/=]{32,}$`)
)

// StartSecretScan starts recording the Secrets of the clusters; it returns once the watches
// have listed the Secrets there are.
func StartSecretScan(ctx context.Context, clusters ...*Cluster) (*SecretScan, error) {
	s := &SecretScan{clusters: clusters, values: map[string]string{}}
	record := func(o any) {
		if sec, ok := o.(*corev1.Secret); ok {
			s.add(sec)
		}
	}
	for _, c := range clusters {
		ca, err := cache.New(c.Config, cache.Options{Scheme: c.Client.Scheme()})
		if err != nil {
			return nil, err
		}
		inf, err := ca.GetInformer(ctx, &corev1.Secret{})
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }}); err != nil {
			return nil, err
		}
		go func() { _ = ca.Start(ctx) }()
		if !ca.WaitForCacheSync(ctx) {
			return nil, fmt.Errorf("secret watch of %s did not sync", c.Name)
		}
	}
	return s, nil
}

func (s *SecretScan) add(sec *corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := "Secret " + sec.Namespace + "/" + sec.Name
	for k, v := range sec.Data {
		private := bytes.Contains(v, []byte("PRIVATE KEY"))
		if !sensitiveKey.MatchString(k) || notSensitive.MatchString(k) || bytes.Contains(v, []byte("BEGIN CERTIFICATE")) && !private {
			continue
		}
		for _, m := range embedded.FindAllSubmatch(v, -1) {
			s.values[string(m[1])] = from + " key " + k + " (inside)"
		}
		if private { // a PEM key, also inside JSON (escaped newlines): its base64 lines
			for _, line := range strings.Split(strings.ReplaceAll(string(v), `\n`, "\n"), "\n") {
				if line = strings.TrimSpace(line); pemBase64.MatchString(line) {
					s.values[line] = from + " key " + k + " (private key)"
				}
			}
		}
		if len(v) >= 16 && !bytes.ContainsAny(v, "\n") {
			s.values[string(v)] = from + " key " + k
		}
	}
}

// Len is the number of credential values recorded so far.
func (s *SecretScan) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// Sources lists where the recorded values came from, without the values.
func (s *SecretScan) Sources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, from := range s.values {
		out = append(out, from)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

const selfCheck = "the scan's self-check"

// Leaks reports each recorded value, raw or base64, found in texts (name -> text, e.g. the
// logs), in any Event of the clusters or in the status of any of drover's objects there. Only
// where each was found is reported, never the value. The scan checks itself on a planted value.
func (s *SecretScan) Leaks(ctx context.Context, texts map[string]string) ([]string, error) {
	all := map[string]string{}
	for k, v := range texts {
		all[k] = v
	}
	s.mu.Lock()
	for v := range s.values {
		all[selfCheck] = "data: " + base64.StdEncoding.EncodeToString([]byte(v))
		break
	}
	s.mu.Unlock()
	if _, ok := all[selfCheck]; !ok {
		return nil, fmt.Errorf("no secret values recorded")
	}
	for _, c := range s.clusters {
		if err := clusterTexts(ctx, c, all); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var leaks []string
	for where, text := range all {
		for v, from := range s.values {
			if strings.Contains(text, v) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(v))) {
				leaks = append(leaks, fmt.Sprintf("a value of %s is in %s", from, where))
			}
		}
	}
	sort.Strings(leaks)
	i := slices.IndexFunc(leaks, func(l string) bool { return strings.HasSuffix(l, " is in "+selfCheck) })
	if i < 0 {
		return nil, fmt.Errorf("the scan did not find the value planted in %q", selfCheck)
	}
	return slices.Delete(leaks, i, i+1), nil
}

// clusterTexts adds every Event of c and the status of every drover object there to texts.
func clusterTexts(ctx context.Context, c *Cluster, texts map[string]string) error {
	var evs eventsv1.EventList
	if err := c.Client.List(ctx, &evs); err != nil {
		return err
	}
	for _, e := range evs.Items {
		texts[c.Name+": Event "+e.Namespace+"/"+e.Name] = e.Note
	}
	var coreEvs corev1.EventList
	if err := c.Client.List(ctx, &coreEvs); err != nil {
		return err
	}
	for _, e := range coreEvs.Items {
		texts[c.Name+": Event "+e.Namespace+"/"+e.Name] = e.Message
	}
	defs, err := crds.Load()
	if err != nil {
		return err
	}
	for _, crd := range defs {
		for _, v := range crd.Spec.Versions {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.ListKind})
			err := c.Client.List(ctx, l)
			if meta.IsNoMatchError(err) {
				continue // a downstream cluster: no drover CRDs
			}
			if err != nil {
				return fmt.Errorf("list %s in %s: %w", crd.Name, c.Name, err)
			}
			for _, o := range l.Items {
				status, _ := json.Marshal(o.Object["status"])
				texts[c.Name+": "+crd.Spec.Names.Kind+" "+o.GetNamespace()+"/"+o.GetName()+" status"] = string(status)
			}
		}
	}
	return nil
}

// Check is the end of a test binary's scan: an error if fewer than minValues credentials were
// recorded (the scan would prove nothing) or if any leaked, naming where (never the value).
func (s *SecretScan) Check(ctx context.Context, minValues int, texts map[string]string) error {
	leaks, err := s.Leaks(ctx, texts)
	switch {
	case err != nil:
		return fmt.Errorf("secret scan: %w", err)
	case s.Len() < minValues:
		return fmt.Errorf("secret scan: only %d secret values recorded (%v), want at least %d: the scan would prove nothing", s.Len(), s.Sources(), minValues)
	case len(leaks) > 0:
		return fmt.Errorf("secret values leaked:\n  %s", strings.Join(leaks, "\n  "))
	}
	return nil
}

// SuiteLogger is the logger of a test binary whose logs a SecretScan searches: drover's own
// capped logger (logging.Capped) at its highest verbosity, into logs, and to stderr too when
// DROVER_TEST_LOG is set.
func SuiteLogger(logs *SyncBuffer) logr.Logger {
	var out io.Writer = logs
	if os.Getenv("DROVER_TEST_LOG") != "" {
		out = io.MultiWriter(logs, os.Stderr)
	}
	return logging.Capped(zap.New(zap.UseDevMode(true), zap.WriteTo(out), zap.Level(zapcore.Level(-logging.MaxVerbosity))))
}

// Benchmarking reports whether the test binary runs benchmarks (-test.bench), which should not
// pay for logging every line. It parses the flags.
func Benchmarking() bool {
	flag.Parse()
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}
