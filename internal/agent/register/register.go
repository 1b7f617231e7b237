// Package register is the agent side of the identity handshake: it trades the import identity in
// the bootstrap secret for a request identity, persists that in the agent credential secret and
// deletes the bootstrap secret. An agent whose stored credential works never registers again;
// one whose credential was rejected and whose bootstrap secret is gone reports that and stops.
package register

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/registration/names"
)

// Scheme has the types the agent reads and writes upstream and downstream.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = fleetv1alpha1.AddToScheme(s)
	return s
}()

// Failure is a registration failure with a stable reason (fleetv1alpha1.Reason*).
type Failure struct {
	Reason string
	Err    error
}

func (f *Failure) Error() string { return f.Reason + ": " + f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// RegistrationFinalizer is the finalizer drover puts on ClusterRegistrations.
const RegistrationFinalizer = "fleet.drover.io/registration-cleanup"

// Options configure registration.
type Options struct {
	// Downstream is a client for the agent's own cluster.
	Downstream client.Client
	// Namespace is the agent namespace downstream.
	Namespace string
	// ClientID overrides the clientID (else the ConfigMap's, else the kube-system UID).
	ClientID string
	// Labels are added to the ConfigMap's cluster labels.
	Labels map[string]string
	// WaitTimeout bounds the wait for the registration secret (default 30m).
	WaitTimeout time.Duration
	// RenewalTokenTTL is the lifetime asked for when refreshing the renewal identity's token
	// (default 30 days); Renew refreshes it once less than half of that is left.
	RenewalTokenTTL time.Duration
	// Report, when set, is told (reason, message) what a registration waits for, once per
	// change: the management cluster's answer (fleetv1alpha1.ReasonPending), or, when the
	// identity that registered may read its ClusterRegistration, the refusal in its Granted
	// condition (that condition's reason). The agent writes it to its status ConfigMap.
	Report func(ctx context.Context, reason, message string)
}

// importTokenRejected says what to do about an import token the management cluster does not
// accept (401).
const importTokenRejected = "the import token was not accepted: it may have expired (the token's spec.ttl) or been deleted; " +
	"create a new token (drover token create) and reinstall the agent with it"

// Credential is a working request identity.
type Credential struct {
	ClusterName, ClusterNamespace, DeploymentNamespace, ServiceAccount string
	Expiry                                                             time.Time
	// Registered is true when this call registered (false: the stored credential was reused).
	Registered bool

	// RenewalExpiry is when the renewal identity's token expires (zero: none).
	RenewalExpiry time.Time

	host, sysNS string
	ca          []byte
	token       atomic.Pointer[string]
	// renewal is the renewal identity's token: it may only create a ClusterRegistration in the
	// cluster namespace, which registers this cluster again.
	renewal string
}

// Config returns a rest.Config for the request identity; it follows token renewals.
func (c *Credential) Config() *rest.Config {
	cfg := &rest.Config{Host: c.host, TLSClientConfig: rest.TLSClientConfig{CAData: c.ca}, QPS: 20, Burst: 40}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", "Bearer "+*c.token.Load())
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Ensure returns a working credential: the stored one if the management cluster accepts it;
// else one from a renewal registration with the stored renewal identity (the request token
// expired while the agent was offline, or was revoked); else one registered with the bootstrap
// secret. A bootstrap secret whose API server URL or CA differ from the stored credential's
// means the agent was re-pointed (a Helm upgrade, or drover redeploying an imported agent): the
// agent then moves there, with its renewal identity if that is still valid.
func Ensure(ctx context.Context, o Options) (*Credential, error) {
	if o.WaitTimeout == 0 {
		o.WaitTimeout = 30 * time.Minute
	}
	log := ctrl.LoggerFrom(ctx)
	var cred *Credential
	stored := &corev1.Secret{}
	err := o.Downstream.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: manifests.CredentialSecret}, stored)
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("get agent credential secret: %w", err)
	}
	if err == nil {
		cred = fromSecret(stored.Data, string(stored.Data[fleetv1alpha1.KeyToken]))
	}
	boot := &corev1.Secret{}
	if err := o.Downstream.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: manifests.BootstrapSecret}, boot); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get bootstrap secret: %w", err)
		}
		boot = nil
	}
	moved := cred != nil && boot != nil && cred.Moved(boot.Data)
	rejected := false
	if cred != nil && !moved {
		switch err := verify(ctx, cred, 0); {
		case err == nil:
			log.V(1).Info("Stored credential works: not registering again")
			return cred, nil
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			log.Info("Stored credential was rejected", "reason", err.Error())
			rejected = true
		default:
			// The management cluster may just be unreachable: registering again would not help.
			return nil, fmt.Errorf("check stored credential: %w", err)
		}
	}
	if moved {
		log.Info("Bootstrap secret points to another API server URL or CA: moving there", "apiServerURL", string(boot.Data[fleetv1alpha1.KeyAPIServerURL]))
	}
	if cred != nil && cred.renewal != "" {
		host, ca := cred.host, cred.ca
		if moved {
			host, ca = string(boot.Data[fleetv1alpha1.KeyAPIServerURL]), boot.Data[fleetv1alpha1.KeyAPIServerCA]
		}
		renewed, err := renewRegistration(ctx, o, cred, host, ca)
		switch {
		case err == nil:
			return finish(ctx, o, renewed, boot)
		case !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err):
			return nil, &Failure{fleetv1alpha1.ReasonRegistrationFailed, fmt.Errorf("renewal registration: %w", err)}
		}
		log.Info("Renewal identity was rejected", "reason", err.Error())
	}
	if boot == nil {
		if rejected {
			return nil, &Failure{fleetv1alpha1.ReasonCredentialRevoked, errors.New("the stored credential and its renewal identity were rejected by the management cluster and there is no bootstrap secret to register again: " +
				"re-import the cluster, or install the agent again with a new token (see the Cluster's AgentCredential condition)")}
		}
		return nil, &Failure{fleetv1alpha1.ReasonBootstrapMissing, fmt.Errorf("neither credential nor bootstrap secret %s/%s exists: install the agent with a registration token", o.Namespace, manifests.BootstrapSecret)}
	}
	cred, err = register(ctx, o, boot.Data)
	if err != nil {
		return nil, err
	}
	return finish(ctx, o, cred, boot)
}

// Moved reports whether bootstrap values point to another API server URL or CA than c.
func (c *Credential) Moved(boot map[string][]byte) bool {
	return string(boot[fleetv1alpha1.KeyAPIServerURL]) != c.host || !bytes.Equal(boot[fleetv1alpha1.KeyAPIServerCA], c.ca)
}

// finish persists a new credential and deletes the bootstrap secret it was registered (or moved)
// with: the renewal identity takes over its job.
func finish(ctx context.Context, o Options, cred *Credential, boot *corev1.Secret) (*Credential, error) {
	if err := persist(ctx, o, cred); err != nil {
		return nil, err
	}
	if boot != nil {
		if err := o.Downstream.Delete(ctx, boot); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("delete bootstrap secret: %w", err)
		}
	}
	ctrl.LoggerFrom(ctx).Info("Registered", "Cluster", cred.ClusterName, "namespace", cred.DeploymentNamespace)
	return cred, nil
}

// renewRegistration registers the cluster again with the renewal identity of old: a
// ClusterRegistration in its cluster namespace, answered to that identity.
func renewRegistration(ctx context.Context, o Options, old *Credential, host string, ca []byte) (*Credential, error) {
	cfg := &rest.Config{Host: host, BearerToken: old.renewal, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: 5, Burst: 10}
	c, err := client.New(cfg, client.Options{Scheme: Scheme, Mapper: RESTMapper})
	if err != nil {
		return nil, fmt.Errorf("client for renewal identity: %w", err)
	}
	clientID, labels, err := identity(ctx, o)
	if err != nil {
		return nil, err
	}
	random := randomHex(32)
	cr := &fleetv1alpha1.ClusterRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: old.DeploymentNamespace, GenerateName: names.RenewalPrefix,
			Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed},
			Finalizers:  []string{RegistrationFinalizer}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: random, ClusterLabels: labels},
	}
	if err := c.Create(ctx, cr); err != nil {
		return nil, fmt.Errorf("create renewal ClusterRegistration at %s: %w", host, err)
	}
	ctrl.LoggerFrom(ctx).Info("Registering again with the renewal identity", "ClusterRegistration", cr.Name)
	g := newGrantWatch(c, cr, o.Report)
	g.waiting(ctx)
	data, err := waitForSecret(ctx, cfg, old.sysNS, names.RegistrationSecretName(clientID, random), o.WaitTimeout, g)
	if err != nil {
		_, err = g.refusal("", fmt.Errorf("wait for the answer to %s: %w", cr.Name, err))
		return nil, err
	}
	d := maps.Clone(data)
	d[fleetv1alpha1.KeyAPIServerURL], d[fleetv1alpha1.KeyAPIServerCA], d[fleetv1alpha1.KeySystemRegistrationNamespace] = []byte(host), ca, []byte(old.sysNS)
	cred := fromSecret(d, string(data[fleetv1alpha1.KeyToken]))
	cred.Registered = true
	if err := verify(ctx, cred, 30*time.Second); err != nil {
		return nil, fmt.Errorf("verify request identity: %w", err)
	}
	return cred, nil
}

func fromSecret(d map[string][]byte, token string) *Credential {
	c := &Credential{
		ClusterName: string(d[fleetv1alpha1.KeyClusterName]), ClusterNamespace: string(d[fleetv1alpha1.KeyClusterNamespace]),
		DeploymentNamespace: string(d[fleetv1alpha1.KeyDeploymentNamespace]), ServiceAccount: string(d[fleetv1alpha1.KeyServiceAccount]),
		host: string(d[fleetv1alpha1.KeyAPIServerURL]), ca: d[fleetv1alpha1.KeyAPIServerCA],
		sysNS: string(d[fleetv1alpha1.KeySystemRegistrationNamespace]), renewal: string(d[fleetv1alpha1.KeyRenewalToken]),
	}
	if c.sysNS == "" {
		c.sysNS = fleetv1alpha1.SystemRegistrationNamespace
	}
	c.Expiry, _ = time.Parse(time.RFC3339, string(d[fleetv1alpha1.KeyTokenExpiry]))
	c.RenewalExpiry, _ = time.Parse(time.RFC3339, string(d[fleetv1alpha1.KeyRenewalTokenExpiry]))
	c.token.Store(&token)
	return c
}

// verify lists BundleDeployments with the request identity. Right after a grant the RBAC
// change may not be visible yet: Forbidden is retried for up to grace instead of registering again.
func verify(ctx context.Context, cred *Credential, grace time.Duration) error {
	cfg := cred.Config()
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c, err := client.New(cfg, client.Options{Scheme: Scheme, Mapper: RESTMapper})
	if err != nil {
		return fmt.Errorf("client for request identity: %w", err)
	}
	deadline := time.Now().Add(grace)
	delay := 100 * time.Millisecond
	for {
		err := c.List(ctx, &fleetv1alpha1.BundleDeploymentList{}, client.InNamespace(cred.DeploymentNamespace), client.Limit(1))
		if err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			return err
		}
		if err := pause(ctx, delay); err != nil {
			return err
		}
		delay = min(delay*2, 2*time.Second)
	}
}

func register(ctx context.Context, o Options, boot map[string][]byte) (*Credential, error) {
	host, ca, token := string(boot[fleetv1alpha1.KeyAPIServerURL]), boot[fleetv1alpha1.KeyAPIServerCA], string(boot[fleetv1alpha1.KeyToken])
	workspace, sysNS, tokenName := string(boot[fleetv1alpha1.KeyClusterNamespace]), string(boot[fleetv1alpha1.KeySystemRegistrationNamespace]), string(boot[fleetv1alpha1.KeyTokenName])
	if host == "" || token == "" || workspace == "" {
		return nil, &Failure{fleetv1alpha1.ReasonRegistrationFailed, errors.New("bootstrap secret lacks apiServerURL, token or clusterNamespace")}
	}
	if sysNS == "" {
		sysNS = fleetv1alpha1.SystemRegistrationNamespace
	}
	importCfg := &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: 5, Burst: 10}
	ic, err := client.New(importCfg, client.Options{Scheme: Scheme, Mapper: RESTMapper})
	if err != nil {
		return nil, fmt.Errorf("client for import identity: %w", err)
	}
	clientID, labels, err := identity(ctx, o)
	if err != nil {
		return nil, err
	}
	random := randomHex(32)
	cr := &fleetv1alpha1.ClusterRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: workspace, GenerateName: "request-", Labels: map[string]string{fleetv1alpha1.TokenLabel: tokenName},
			// Answer under the collision-free name (drover answers older agents under the legacy one).
			Annotations: map[string]string{names.SecretNameAnnotation: names.SecretNameLengthPrefixed},
			// drover's cleanup finalizer, set here to save the controller a write per registration.
			Finalizers: []string{RegistrationFinalizer}},
		Spec: fleetv1alpha1.ClusterRegistrationSpec{ClientID: clientID, ClientRandom: random, ClusterLabels: labels},
	}
	if err := ic.Create(ctx, cr); err != nil {
		if apierrors.IsUnauthorized(err) {
			err = fmt.Errorf("%w: %s", err, importTokenRejected)
		}
		return nil, &Failure{fleetv1alpha1.ReasonRegistrationFailed, fmt.Errorf("create ClusterRegistration at %s: %w", host, err)}
	}
	secretName := names.RegistrationSecretName(clientID, random)
	ctrl.LoggerFrom(ctx).V(1).Info("Waiting for registration secret", "ClusterRegistration", cr.Name, "secret", secretName)
	g := newGrantWatch(ic, cr, o.Report)
	g.waiting(ctx)
	data, err := waitForSecret(ctx, importCfg, sysNS, secretName, o.WaitTimeout, g)
	if err != nil {
		err = fmt.Errorf("wait for registration secret of %s: %w", cr.Name, err)
		if apierrors.IsUnauthorized(err) {
			err = fmt.Errorf("%w: %s", err, importTokenRejected)
		}
		reason, err := g.refusal(fleetv1alpha1.ReasonRegistrationFailed, err)
		return nil, &Failure{reason, err}
	}
	d := maps.Clone(data)
	d[fleetv1alpha1.KeyAPIServerURL], d[fleetv1alpha1.KeyAPIServerCA], d[fleetv1alpha1.KeySystemRegistrationNamespace] = []byte(host), ca, []byte(sysNS)
	cred := fromSecret(d, string(data[fleetv1alpha1.KeyToken]))
	cred.Registered = true
	if err := verify(ctx, cred, 30*time.Second); err != nil {
		return nil, &Failure{fleetv1alpha1.ReasonRegistrationFailed, fmt.Errorf("verify request identity: %w", err)}
	}
	return cred, nil
}

// identity is the clientID (option, ConfigMap, else the kube-system namespace UID) and labels.
func identity(ctx context.Context, o Options) (string, map[string]string, error) {
	labels := map[string]string{}
	cm := &corev1.ConfigMap{}
	err := o.Downstream.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: manifests.ConfigMap}, cm)
	if client.IgnoreNotFound(err) != nil {
		return "", nil, fmt.Errorf("get agent config: %w", err)
	}
	if v := cm.Data[manifests.KeyLabels]; v != "" && v != "null" {
		if err := json.Unmarshal([]byte(v), &labels); err != nil {
			return "", nil, fmt.Errorf("parse agent config labels: %w", err)
		}
	}
	maps.Copy(labels, o.Labels)
	id := o.ClientID
	if id == "" {
		id = cm.Data[fleetv1alpha1.KeyClientID]
	}
	if id == "" {
		ks := &corev1.Namespace{}
		if err := o.Downstream.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ks); err != nil {
			return "", nil, fmt.Errorf("get kube-system namespace for the clientID: %w", err)
		}
		id = string(ks.UID)
	}
	return id, labels, nil
}

// grantWatch follows a ClusterRegistration while its agent waits for the answer: it reports the
// wait, and a refusal (Granted=False) where the registering identity may read the registration.
// drover's import and renewal identities may only create registrations: their reads are
// refused, and the first refusal ends the checks; they learn of a refusal from the answer
// Secret, which drover writes with the refusal's reason and message (answered).
type grantWatch struct {
	c      client.Reader
	key    client.ObjectKey
	report func(ctx context.Context, reason, message string)
	// unreadable: the identity may not read the registration.
	unreadable bool
	next       time.Time
	// refused is the last refusal reported (nil: none).
	refused *metav1.Condition
}

// grantCheckInterval is how often a readable ClusterRegistration's status is read while its
// agent waits.
const grantCheckInterval = 3 * time.Second

func newGrantWatch(c client.Reader, cr *fleetv1alpha1.ClusterRegistration, report func(context.Context, string, string)) *grantWatch {
	return &grantWatch{c: c, key: client.ObjectKeyFromObject(cr), report: report}
}

func (g *grantWatch) send(ctx context.Context, reason, msg string) {
	if g.report != nil {
		g.report(ctx, reason, msg)
	}
}

// waiting reports that the agent waits for the answer.
func (g *grantWatch) waiting(ctx context.Context) {
	ctrl.LoggerFrom(ctx).Info("Waiting for the management cluster to grant the registration", "ClusterRegistration", g.key.String())
	g.send(ctx, fleetv1alpha1.ReasonPending, fmt.Sprintf("Waiting for the management cluster to grant ClusterRegistration %s. "+
		"If it is refused, its Granted condition on the management cluster says why: kubectl -n %s describe clusterregistration %s",
		g.key, g.key.Namespace, g.key.Name))
}

// check reads the registration's Granted condition (at most every grantCheckInterval) and
// reports and logs a refusal, once per reason and message.
func (g *grantWatch) check(ctx context.Context) {
	if g.unreadable || time.Now().Before(g.next) {
		return
	}
	g.next = time.Now().Add(grantCheckInterval)
	log := ctrl.LoggerFrom(ctx).WithValues("ClusterRegistration", g.key.String())
	cr := &fleetv1alpha1.ClusterRegistration{}
	if err := g.c.Get(ctx, g.key, cr); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			g.unreadable = true
		}
		log.V(1).Info("Cannot read the registration's status", "error", err.Error())
		return
	}
	c := meta.FindStatusCondition(cr.Status.Conditions, fleetv1alpha1.ConditionGranted)
	if cr.Status.Granted || c == nil || c.Status != metav1.ConditionFalse {
		return
	}
	g.refuse(ctx, c.Reason, c.Message)
}

// answered takes the answer Secret's data: a refusal (no token, the refusal's reason and
// message, which drover writes where the registering identity may read it) is reported.
func (g *grantWatch) answered(ctx context.Context, data map[string][]byte) {
	if reason := string(data[fleetv1alpha1.KeyRefusedReason]); reason != "" {
		g.refuse(ctx, reason, string(data[fleetv1alpha1.KeyRefusedMessage]))
	}
}

// refuse reports and logs a refusal, once per reason and message.
func (g *grantWatch) refuse(ctx context.Context, reason, msg string) {
	if g.refused != nil && g.refused.Reason == reason && g.refused.Message == msg {
		return
	}
	g.refused = &metav1.Condition{Type: fleetv1alpha1.ConditionGranted, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	ctrl.LoggerFrom(ctx).Info("Registration refused by the management cluster; waiting in case it is granted later",
		"ClusterRegistration", g.key.String(), "reason", reason, "message", msg)
	g.send(ctx, reason, fmt.Sprintf("ClusterRegistration %s was refused by the management cluster (%s): %s", g.key, reason, msg))
}

// refusal returns reason and err as they are, or, when a refusal was seen, its reason and err
// saying it.
func (g *grantWatch) refusal(reason string, err error) (string, error) {
	if g.refused == nil {
		return reason, err
	}
	return g.refused.Reason, fmt.Errorf("ClusterRegistration %s was refused (%s: %s): %w", g.key, g.refused.Reason, g.refused.Message, err)
}

// waitForSecret watches the one registration secret (a name-scoped watch, which is all the
// import identity may do) instead of polling, so N agents cost N watches, not N×polls. Until
// the watch is allowed, each retry runs g's check first; an answer without a token (a
// refusal) goes to g.
func waitForSecret(ctx context.Context, cfg *rest.Config, ns, name string, timeout time.Duration, g *grantWatch) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for import identity: %w", err)
	}
	delay := 250 * time.Millisecond
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		// Until the grant, the import identity may not even watch the name: back off and retry.
		w, err := cs.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel})
		if err == nil {
			for ev := range w.ResultChan() {
				s, ok := ev.Object.(*corev1.Secret)
				if !ok || ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				if len(s.Data[fleetv1alpha1.KeyToken]) > 0 {
					w.Stop()
					return s.Data, nil
				}
				g.answered(ctx, s.Data)
			}
			w.Stop()
		} else if apierrors.IsUnauthorized(err) {
			// The identity itself was deleted (or its token expired): waiting cannot help.
			return nil, fmt.Errorf("watch registration secret: %w", err)
		} else if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("Watching registration secret failed, retrying", "error", err.Error())
		}
		g.check(ctx)
		if err := pause(ctx, jitter(delay)); err != nil {
			return nil, err
		}
		delay = min(delay*3/2, 2*time.Second)
	}
}

func persist(ctx context.Context, o Options, c *Credential) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: manifests.CredentialSecret}}
	data := c.data()
	err := o.Downstream.Create(ctx, &corev1.Secret{ObjectMeta: s.ObjectMeta, Type: fleetv1alpha1.SecretTypeAgentCredential, Data: data})
	if apierrors.IsAlreadyExists(err) {
		if err := o.Downstream.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return fmt.Errorf("get agent credential secret: %w", err)
		}
		s.Data = data
		err = o.Downstream.Update(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("persist agent credential secret: %w", err)
	}
	return nil
}

func (c *Credential) data() map[string][]byte {
	return map[string][]byte{
		fleetv1alpha1.KeyAPIServerURL: []byte(c.host), fleetv1alpha1.KeyAPIServerCA: c.ca, fleetv1alpha1.KeyToken: []byte(*c.token.Load()),
		fleetv1alpha1.KeyTokenExpiry: []byte(c.Expiry.UTC().Format(time.RFC3339)), fleetv1alpha1.KeyClusterName: []byte(c.ClusterName),
		fleetv1alpha1.KeyClusterNamespace: []byte(c.ClusterNamespace), fleetv1alpha1.KeyDeploymentNamespace: []byte(c.DeploymentNamespace),
		fleetv1alpha1.KeyServiceAccount: []byte(c.ServiceAccount), fleetv1alpha1.KeySystemRegistrationNamespace: []byte(c.sysNS),
		fleetv1alpha1.KeyRenewalToken: []byte(c.renewal), fleetv1alpha1.KeyRenewalTokenExpiry: []byte(c.RenewalExpiry.UTC().Format(time.RFC3339)),
	}
}

// Renew replaces the request token with a fresh one (a TokenRequest on the agent's own
// ServiceAccount) and, once less than half of o.RenewalTokenTTL is left, the renewal identity's
// token too (the only other token it may request), and persists them.
func (c *Credential) Renew(ctx context.Context, o Options, ttl time.Duration) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("clientset for request identity: %w", err)
	}
	request := func(sa string, ttl time.Duration) (*authenticationv1.TokenRequest, error) {
		secs := int64(ttl / time.Second)
		return cs.CoreV1().ServiceAccounts(c.DeploymentNamespace).CreateToken(ctx, sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	}
	tr, err := request(c.ServiceAccount, ttl)
	if err != nil {
		return fmt.Errorf("renew request token: %w", err)
	}
	tok := tr.Status.Token
	c.token.Store(&tok)
	c.Expiry = tr.Status.ExpirationTimestamp.Time
	if o.RenewalTokenTTL == 0 {
		o.RenewalTokenTTL = 30 * 24 * time.Hour
	}
	if c.renewal == "" || time.Until(c.RenewalExpiry) < o.RenewalTokenTTL/2 {
		// A credential from before renewal identities gets its first token here, once drover
		// has brought the cluster's rights up to date; until then the request is refused.
		rt, err := request(names.RenewalServiceAccount, o.RenewalTokenTTL)
		switch {
		case err == nil:
			c.renewal, c.RenewalExpiry = rt.Status.Token, rt.Status.ExpirationTimestamp.Time
		case c.renewal != "":
			return fmt.Errorf("renew renewal identity token: %w", err)
		default:
			ctrl.LoggerFrom(ctx).Info("No renewal identity for this cluster yet", "reason", err.Error())
		}
	}
	return persist(ctx, o, c)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

func jitter(d time.Duration) time.Duration {
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	return d/2 + d*time.Duration(b[0])/512
}

// pause waits for d or until ctx ends (a retry delay, not synchronisation).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
