package rbac

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/droverhq/drover/internal/crds"
	"github.com/droverhq/drover/internal/server"
)

// lockedBuffer collects the suite's log lines (drover server's controllers and the agent, at
// every verbosity).
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secretValues records the sensitive values of every Secret that exists at any time during the
// suite (cloud keys, tokens, kubeconfigs' tokens, registration answers), from an admin watch.
type secretValues struct {
	mu     sync.Mutex
	values map[string]string // value -> where it came from
}

// sensitiveKey: keys whose values are credentials. Secrets also hold names, URLs, expiry
// times, IDs and CA certificates, which may be logged (notSensitive).
var (
	sensitiveKey = regexp.MustCompile(`(?i)token|secret|password|key|credential|kubeconfig|value|config|json`)
	notSensitive = regexp.MustCompile(`(?i)(expiry|name|namespace|url|ca|id|endpoint)$`)
)

// kubeconfigSecret finds the credentials inside a kubeconfig (or a JSON key file) value.
var kubeconfigSecret = regexp.MustCompile(`(?m)(?:token|client-key-data|password|private_key|access_token)"?\s*[:=]\s*"?([A-Za-z0-9._\-+/=]{16,})`)

func (s *secretValues) add(sec *corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := "Secret " + sec.Namespace + "/" + sec.Name
	for k, v := range sec.Data {
		if !sensitiveKey.MatchString(k) || notSensitive.MatchString(k) || strings.Contains(string(v), "BEGIN CERTIFICATE") && !strings.Contains(string(v), "PRIVATE KEY") {
			continue
		}
		for _, m := range kubeconfigSecret.FindAllSubmatch(v, -1) {
			s.values[string(m[1])] = from + " key " + k + " (inside)"
		}
		if len(v) >= 16 && !bytes.ContainsAny(v, "\n") {
			s.values[string(v)] = from + " key " + k
		}
	}
}

// watchSecrets starts recording every Secret's values.
func watchSecrets(ctx context.Context) (*secretValues, error) {
	s := &secretValues{values: map[string]string{}}
	c, err := cache.New(cluster.Config, cache.Options{Scheme: server.Scheme()})
	if err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, err
	}
	record := func(o any) {
		if sec, ok := o.(*corev1.Secret); ok {
			s.add(sec)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("secret watch did not sync")
	}
	return s, nil
}

// findLeaks reports each recorded secret value (raw or base64) found in the logs, in any
// Event, or in the status of any of drover's objects. Only the places are printed, never the
// values.
func findLeaks(ctx context.Context, s *secretValues, logs string) ([]string, error) {
	texts := map[string]string{"the logs": logs}
	// The scan checks itself: a text holding one recorded value base64-encoded must be reported.
	s.mu.Lock()
	for v := range s.values {
		texts[selfCheck] = "data: " + base64.StdEncoding.EncodeToString([]byte(v))
		break
	}
	s.mu.Unlock()
	var evs eventsv1.EventList
	if err := cluster.Client.List(ctx, &evs); err != nil {
		return nil, err
	}
	for _, e := range evs.Items {
		texts["Event "+e.Namespace+"/"+e.Name] = e.Note
	}
	var coreEvs corev1.EventList
	if err := cluster.Client.List(ctx, &coreEvs); err != nil {
		return nil, err
	}
	for _, e := range coreEvs.Items {
		texts["Event "+e.Namespace+"/"+e.Name] = e.Message
	}
	all, err := crds.Load()
	if err != nil {
		return nil, err
	}
	for _, crd := range all {
		for _, v := range crd.Spec.Versions {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.ListKind})
			if err := cluster.Client.List(ctx, l); err != nil {
				return nil, fmt.Errorf("list %s: %w", crd.Name, err)
			}
			for _, o := range l.Items {
				status, _ := json.Marshal(o.Object["status"])
				texts[crd.Spec.Names.Kind+" "+o.GetNamespace()+"/"+o.GetName()+" status"] = string(status)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var leaks []string
	for where, text := range texts {
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

const selfCheck = "the scan's self-check"
