package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/join"
	"github.com/droverhq/drover/internal/metrics/metricstest"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/pkg/cloudsim/simcore"
)

// TestJoinLifecycle is issue 13's "done when", per provider: drover creates the cluster at the
// simulator, whose endpoint is the downstream API server → active → a kubeconfig Secret and a
// fleet Cluster with the provider, region and version labels → the agent is deployed with the
// provider's token (accepted by the downstream's token webhook) and registers → a Bundle
// targeted by the provider label reaches the cluster → deleting the hosted Cluster removes the
// fleet Cluster and the agent before the first delete call reaches the cloud.
func TestJoinLifecycle(t *testing.T) {
	for _, provider := range []string{"eks", "aks", "gke"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			w := newWorld(t, provider)
			name := provider + "-" + suffix()
			agentNS := "agent-" + name
			c := w.hostedCluster(name)
			c.Spec.Fleet = &v1.FleetJoin{AgentNamespace: agentNS}
			// Who the kubeconfig authenticates as on the downstream: drover's own identity.
			var wantUser string
			switch provider {
			case "eks":
				wantUser = w.principal() // its access entry's username
			case "aks":
				wantUser = "clusterAdmin"
				c.Spec.Fleet.AKSCredential = v1.AKSCredentialAdmin // listClusterAdminCredential
			case "gke":
				wantUser = "drover@" + gkeProject + ".iam.gserviceaccount.com"
			}
			if err := mgmt.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}

			// Active, then a fleet Cluster with the labels Bundles target.
			c = waitJoinedReason(t, w.ns, name, v1.ReasonJoined, 90*time.Second)
			fc := &fleetv1.Cluster{}
			if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, fc); err != nil {
				t.Fatalf("fleet Cluster: %v", err)
			}
			for k, want := range map[string]string{
				join.LabelProvider: provider, join.LabelRegion: w.region(), join.LabelHostedCluster: name, "team": "platform",
			} {
				if got := fc.Labels[k]; got != want {
					t.Errorf("fleet Cluster label %s = %q, want %q (labels %v)", k, got, want, fc.Labels)
				}
			}
			if v := fc.Labels[join.LabelKubernetesVersion]; !strings.HasPrefix(v, "1.3") {
				t.Errorf("fleet Cluster label %s = %q, want the cluster's version", join.LabelKubernetesVersion, v)
			}
			if fc.Spec.KubeConfigSecret != join.SecretName(name) || fc.Spec.AgentNamespace != agentNS {
				t.Errorf("fleet Cluster spec %+v, want kubeConfigSecret %s and agentNamespace %s", fc.Spec, join.SecretName(name), agentNS)
			}

			// The kubeconfig Secret: owned, labelled, and its provider token works downstream.
			s, token := kubeconfigSecret(t, w.ns, name)
			if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != c.UID || s.Labels[join.LabelHostedCluster] != name {
				t.Errorf("kubeconfig Secret owner %v labels %v, want the hosted Cluster", s.OwnerReferences, s.Labels)
			}
			if user, err := whoAmI(t, s.Data[fleetv1.KeyKubeconfig]); err != nil || user != wantUser {
				t.Fatalf("the kubeconfig Secret's %s token on the downstream: user %q, %v; want %q", provider, user, err, wantUser)
			}
			if f := c.Status.Fleet; f.CredentialsRefreshTime == nil || f.CredentialsExpireTime == nil || !f.CredentialsRefreshTime.Before(f.CredentialsExpireTime) {
				t.Errorf("status.fleet %+v: want a refresh time before the expiry", f)
			}

			// The importer deploys the agent with those credentials; the agent registers.
			eventually(t, 60*time.Second, func() error {
				if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
					return err
				}
				if !meta.IsStatusConditionTrue(fc.Status.Conditions, fleetv1.ConditionImported) {
					return fmt.Errorf("fleet Cluster not imported: %+v", fc.Status.Conditions)
				}
				_, err := agentDeployment(ctx, agentNS)
				return err
			})
			startAgent(t, agentNS)
			eventually(t, 60*time.Second, func() error {
				h := getHosted(t, w.ns, name)
				if a := fleetCond(h, v1.ConditionAgentReady); a == nil || a.Status != metav1.ConditionTrue {
					return fmt.Errorf("AgentReady %+v", a)
				}
				return nil
			})
			if v := metricstest.Value(t, "drover_hosted_fleet", map[string]string{"provider": provider, "state": "agent_ready", "reason": v1.ReasonJoined}); v < 1 {
				t.Errorf("drover_hosted_fleet{provider=%s,state=agent_ready} = %v, want this cluster counted", provider, v)
			}

			// A Bundle for "all <provider> clusters in <region>" reaches it.
			cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "hello-" + name},
				Data: map[string]string{"from": "bundle"}}
			raw, err := json.Marshal(cm)
			if err != nil {
				t.Fatal(err)
			}
			b := &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "hello"}, Spec: fleetv1.BundleSpec{
				Resources: []runtime.RawExtension{{Raw: raw}}, DefaultNamespace: agentNS,
				Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
					join.LabelProvider: provider, join.LabelRegion: w.region(),
				}}}},
			}}
			if err := mgmt.Client.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			eventually(t, 60*time.Second, func() error {
				return downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: cm.Name}, &corev1.ConfigMap{})
			})
			noTokenAnywhere(t, getHosted(t, w.ns, name), token)

			// Deleting: the fleet Cluster and the agent go before the cloud cluster.
			w.deleteHook(func() string {
				var why []string
				if err := mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); !isGone(err) {
					why = append(why, fmt.Sprintf("the fleet Cluster still exists (%v)", err))
				}
				if _, err := agentDeployment(context.Background(), agentNS); !isGone(err) {
					why = append(why, fmt.Sprintf("the agent Deployment is still downstream (%v)", err))
				}
				return strings.Join(why, "; ")
			})
			if err := mgmt.Client.Delete(ctx, c); err != nil {
				t.Fatal(err)
			}
			eventually(t, 90*time.Second, func() error {
				if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(c), &v1.Cluster{}); !isGone(err) {
					return fmt.Errorf("hosted Cluster still there: %w", err)
				}
				if w.cloudClusterExists(name) {
					return fmt.Errorf("the cloud cluster still exists")
				}
				return nil
			})
			saw, seen := w.firstDeleteSaw()
			if !seen {
				t.Fatal("no delete request reached the simulator")
			}
			if saw != "" {
				t.Errorf("when the first delete request reached the cloud: %s", saw)
			}
			if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: join.SecretName(name)}, &corev1.Secret{}); !isGone(err) {
				t.Errorf("kubeconfig Secret after the delete: %v, want NotFound", err)
			}
		})
	}
}

// TestKubeconfigRotation: the token in the kubeconfig Secret is replaced when its refresh time
// (before expiry) comes on the join's clock — not before — and an agent deployment in flight
// (deployed, not yet registered) is neither redeployed nor kept from registering. Not parallel:
// it moves the join's clock, which the other tests' clusters share.
func TestKubeconfigRotation(t *testing.T) {
	joinClock.SetTime(time.Now())
	t.Cleanup(func() { joinClock.SetTime(time.Now()) })
	ctx := t.Context()
	w := newWorld(t, "eks")
	name := "rotate-" + suffix()
	agentNS := "agent-" + name
	c := w.hostedCluster(name)
	c.Spec.Fleet = &v1.FleetJoin{AgentNamespace: agentNS}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = waitJoinedReason(t, w.ns, name, v1.ReasonJoined, 90*time.Second)
	_, tok1 := kubeconfigSecret(t, w.ns, name)
	f := c.Status.Fleet
	if got := f.CredentialsExpireTime.Sub(f.CredentialsRefreshTime.Time); got != 5*time.Minute {
		t.Errorf("an EKS token (15 min) is refreshed %s before it expires, want 5m", got)
	}
	var deployed *int64
	var gen int64
	eventually(t, 60*time.Second, func() error {
		fc := &fleetv1.Cluster{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, fc); err != nil {
			return err
		}
		d, err := agentDeployment(ctx, agentNS)
		if err != nil || fc.Status.AgentDeployedGeneration == nil {
			return fmt.Errorf("agent not deployed: %w", err)
		}
		deployed, gen = fc.Status.AgentDeployedGeneration, d.Generation
		return nil
	})

	poke := func(v string) {
		t.Helper()
		h := getHosted(t, w.ns, name)
		patch := client.MergeFrom(h.DeepCopy())
		if h.Annotations == nil {
			h.Annotations = map[string]string{}
		}
		h.Annotations["test.drover.io/poke"] = v
		if err := mgmt.Client.Patch(ctx, h, patch); err != nil {
			t.Fatal(err)
		}
	}
	// Just before the refresh time, passes keep the token.
	joinClock.SetTime(f.CredentialsRefreshTime.Add(-2 * time.Second))
	poke("1")
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, tok := kubeconfigSecret(t, w.ns, name); tok != tok1 {
			t.Fatal("the token was replaced before its refresh time")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// At the refresh time, the next pass replaces it.
	joinClock.SetTime(f.CredentialsRefreshTime.Add(time.Second))
	poke("2")
	var s *corev1.Secret
	eventually(t, 30*time.Second, func() error {
		var tok string
		if s, tok = kubeconfigSecret(t, w.ns, name); tok == tok1 {
			return fmt.Errorf("token not replaced")
		}
		return nil
	})
	if user, err := whoAmI(t, s.Data[fleetv1.KeyKubeconfig]); err != nil || user == "" {
		t.Fatalf("the new token on the downstream: %q, %v", user, err)
	}
	eventually(t, 10*time.Second, func() error {
		h := getHosted(t, w.ns, name)
		if !h.Status.Fleet.CredentialsRefreshTime.After(f.CredentialsRefreshTime.Time) {
			return fmt.Errorf("status.fleet.credentialsRefreshTime %v not moved past %v", h.Status.Fleet.CredentialsRefreshTime, f.CredentialsRefreshTime)
		}
		return nil
	})
	// The agent deployment in flight was left alone and registers.
	fc := &fleetv1.Cluster{}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, fc); err != nil {
		t.Fatal(err)
	}
	if d, err := agentDeployment(ctx, agentNS); err != nil || d.Generation != gen || *fc.Status.AgentDeployedGeneration != *deployed {
		t.Errorf("the rotation redeployed the agent: %v, generation %d → %d", err, gen, d.Generation)
	}
	startAgent(t, agentNS)
	eventually(t, 60*time.Second, func() error {
		if a := fleetCond(getHosted(t, w.ns, name), v1.ConditionAgentReady); a == nil || a.Status != metav1.ConditionTrue {
			return fmt.Errorf("AgentReady %+v", a)
		}
		return nil
	})
}

// TestAccessEntryMissing imports an EKS cluster created by someone else: drover's principal has
// no access entry, so the join reports AccessEntryMissing naming it (and nothing else breaks);
// adding the entry "in the console" makes the cluster join on the next try. Forgetting it then
// removes the agent and keeps the cluster and its workloads.
func TestAccessEntryMissing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, "eks")
	console := eksim.NewClient(w.eksURL, "us-west-2", consoleKey, consoleSecret)
	name := "imported-" + suffix()
	if _, err := console.CreateCluster(ctx, &awseks.CreateClusterInput{
		Name: aws.String(name), RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-a", "subnet-b"}},
	}); err != nil {
		t.Fatal(err)
	}
	c := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}, Spec: v1.ClusterSpec{
		EKSConfig: &v1.EKSClusterConfig{DisplayName: name, Region: "us-west-2", Imported: true, CredentialSecret: "cred"},
		Fleet:     &v1.FleetJoin{AgentNamespace: "agent-" + name},
	}}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	principal := w.eks.Principal(droverKey)
	c = waitJoinedReason(t, w.ns, name, v1.ReasonAccessEntryMissing, 60*time.Second)
	msg := fleetCond(c, v1.ConditionJoined).Message
	for _, want := range []string{principal, "create-access-entry", "AmazonEKSClusterAdminPolicy"} {
		if !strings.Contains(msg, want) {
			t.Errorf("AccessEntryMissing message %q does not name %q", msg, want)
		}
	}
	if !meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionReady) || c.Status.Phase != v1.PhaseActive {
		t.Errorf("the import broke: phase %s, conditions %+v", c.Status.Phase, c.Status.Conditions)
	}
	// What DroverHostedClustersNotJoined alerts on.
	if v := metricstest.Value(t, "drover_hosted_fleet", map[string]string{"provider": "eks", "state": "not_joined", "reason": v1.ReasonAccessEntryMissing}); v < 1 {
		t.Errorf("drover_hosted_fleet{provider=eks,state=not_joined,reason=AccessEntryMissing} = %v, want this cluster counted", v)
	}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); !isGone(err) {
		t.Errorf("fleet Cluster without access: %v, want NotFound", err)
	}

	// The console adds the entry; the next try joins.
	if _, err := console.CreateAccessEntry(ctx, &awseks.CreateAccessEntryInput{ClusterName: aws.String(name), PrincipalArn: aws.String(principal)}); err != nil {
		t.Fatal(err)
	}
	if _, err := console.AssociateAccessPolicy(ctx, &awseks.AssociateAccessPolicyInput{
		ClusterName: aws.String(name), PrincipalArn: aws.String(principal), PolicyArn: aws.String(eksim.ClusterAdminPolicy),
		AccessScope: &ekstypes.AccessScope{Type: ekstypes.AccessScopeTypeCluster},
	}); err != nil {
		t.Fatal(err)
	}
	waitJoinedReason(t, w.ns, name, v1.ReasonJoined, 30*time.Second)
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); err != nil {
		t.Errorf("fleet Cluster after the access entry was added: %v", err)
	}
	if n := len(events.find(v1.ReasonAccessEntryMissing, name)); n != 1 {
		t.Errorf("%d AccessEntryMissing events, want 1 (once per finding, not per try)", n)
	}

	// Forgetting the imported cluster removes drover's agent; the cluster and the workloads
	// Bundles put there stay.
	agentNS := "agent-" + name
	// A deployment that fails (the downstream slow to answer under a full test run) is retried
	// after 30 s: allow a few retries, and say why it is not there yet.
	eventually(t, 2*time.Minute, func() error {
		if _, err := agentDeployment(ctx, agentNS); err != nil {
			fc := &fleetv1.Cluster{}
			_ = mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, fc)
			return fmt.Errorf("%w; fleet Cluster Imported: %+v", err, meta.FindStatusCondition(fc.Status.Conditions, fleetv1.ConditionImported))
		}
		return nil
	})
	startAgent(t, agentNS)
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "workload-" + name}}
	raw, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Create(ctx, &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "workload"}, Spec: fleetv1.BundleSpec{
		Resources: []runtime.RawExtension{{Raw: raw}}, DefaultNamespace: agentNS,
		Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{join.LabelHostedCluster: name}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		return downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: cm.Name}, &corev1.ConfigMap{})
	})
	if err := mgmt.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(c), &v1.Cluster{}); !isGone(err) {
			return fmt.Errorf("hosted Cluster still there: %w", err)
		}
		return nil
	})
	if _, err := agentDeployment(ctx, agentNS); !isGone(err) {
		t.Errorf("agent Deployment after forgetting the cluster: %v, want NotFound", err)
	}
	if !w.cloudClusterExists(name) {
		t.Error("forgetting an imported cluster deleted it in the cloud")
	}
	if err := downstream.Client.Get(ctx, client.ObjectKey{Namespace: agentNS, Name: cm.Name}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the Bundle's workload after forgetting the cluster: %v, want it kept", err)
	}
}

// TestEndpointPrivate: an EKS cluster with a private endpoint only cannot be joined; the
// condition says what to do, and drover does not retry in a hot loop.
func TestEndpointPrivate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, "eks")
	name := "private-" + suffix()
	c := w.hostedCluster(name)
	c.Spec.EKSConfig.PublicAccess, c.Spec.EKSConfig.PrivateAccess = ptr.To(false), ptr.To(true)
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = waitJoinedReason(t, w.ns, name, v1.ReasonEndpointPrivate, 90*time.Second)
	if msg := fleetCond(c, v1.ConditionJoined).Message; !strings.Contains(msg, "publicAccess") {
		t.Errorf("EndpointPrivate message %q does not say to enable eksConfig.publicAccess", msg)
	}
	// Once the cluster is settled, nothing calls the provider for it for a while.
	eventually(t, 60*time.Second, func() error {
		h := getHosted(t, w.ns, name)
		if h.Status.Phase != v1.PhaseActive || !meta.IsStatusConditionTrue(h.Status.Conditions, v1.ConditionSynced) {
			return fmt.Errorf("phase %s, conditions %+v", h.Status.Phase, h.Status.Conditions)
		}
		return nil
	})
	before := w.eks.Counters().Get("DescribeCluster")
	time.Sleep(3 * time.Second) // a measurement window, not synchronisation
	if n := w.eks.Counters().Get("DescribeCluster") - before; n > 1 {
		t.Errorf("%d DescribeCluster calls in 3 s for a private cluster: a hot loop", n)
	}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); !isGone(err) {
		t.Errorf("fleet Cluster for a private cluster: %v, want NotFound", err)
	}
}

// TestOptOutAndLabels: spec.fleet.join: false keeps an active cluster out of the fleet; opting
// in joins it; the fleet Cluster's labels follow the hosted Cluster's (added, changed, removed);
// opting out again makes it leave (fleet Cluster, agent and Secret removed, finalizer gone)
// while the hosted cluster itself is untouched.
func TestOptOutAndLabels(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, "eks")
	name := "optout-" + suffix()
	agentNS := "agent-" + name
	c := w.hostedCluster(name)
	c.Spec.Fleet = &v1.FleetJoin{Join: ptr.To(false), AgentNamespace: agentNS}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, func() error {
		h := getHosted(t, w.ns, name)
		if j := fleetCond(h, v1.ConditionJoined); h.Status.Phase != v1.PhaseActive || j == nil || j.Reason != v1.ReasonJoinDisabled {
			return fmt.Errorf("phase %s, Joined %+v", h.Status.Phase, j)
		}
		return nil
	})
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); !isGone(err) {
		t.Errorf("fleet Cluster of an opted-out cluster: %v, want NotFound", err)
	}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: join.SecretName(name)}, &corev1.Secret{}); !isGone(err) {
		t.Errorf("kubeconfig Secret of an opted-out cluster: %v, want NotFound", err)
	}

	update := func(f func(h *v1.Cluster)) {
		t.Helper()
		// Optimistic lock, as a user's edit: the controllers write the Cluster too, so a
		// conflict is retried on the latest version.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			h := getHosted(t, w.ns, name)
			patch := client.MergeFromWithOptions(h.DeepCopy(), client.MergeFromWithOptimisticLock{})
			f(h)
			return mgmt.Client.Patch(ctx, h, patch)
		}); err != nil {
			t.Fatal(err)
		}
	}
	fleetLabels := func(want map[string]string, absent ...string) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			fc := &fleetv1.Cluster{}
			if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, fc); err != nil {
				return err
			}
			for k, v := range want {
				if fc.Labels[k] != v {
					return fmt.Errorf("fleet Cluster labels %v, want %s=%s", fc.Labels, k, v)
				}
			}
			for _, k := range absent {
				if _, ok := fc.Labels[k]; ok {
					return fmt.Errorf("fleet Cluster labels %v still have %s", fc.Labels, k)
				}
			}
			return nil
		})
	}

	update(func(h *v1.Cluster) { h.Spec.Fleet.Join = ptr.To(true) })
	waitJoinedReason(t, w.ns, name, v1.ReasonJoined, 30*time.Second)
	fleetLabels(map[string]string{"team": "platform", join.LabelProvider: "eks"})
	update(func(h *v1.Cluster) { h.Labels["team"], h.Labels["tier"] = "apps", "gold" })
	fleetLabels(map[string]string{"team": "apps", "tier": "gold", join.LabelProvider: "eks"})
	update(func(h *v1.Cluster) { delete(h.Labels, "tier") })
	fleetLabels(map[string]string{"team": "apps", join.LabelProvider: "eks"}, "tier")
	eventually(t, 60*time.Second, func() error {
		_, err := agentDeployment(ctx, agentNS)
		return err
	})

	update(func(h *v1.Cluster) { h.Spec.Fleet.Join = ptr.To(false) })
	h := waitJoinedReason(t, w.ns, name, v1.ReasonJoinDisabled, 30*time.Second)
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); !isGone(err) {
		t.Errorf("fleet Cluster after opting out: %v, want NotFound", err)
	}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: join.SecretName(name)}, &corev1.Secret{}); !isGone(err) {
		t.Errorf("kubeconfig Secret after opting out: %v, want NotFound", err)
	}
	if _, err := agentDeployment(ctx, agentNS); !isGone(err) {
		t.Errorf("agent Deployment after opting out: %v, want NotFound", err)
	}
	for _, f := range h.Finalizers {
		if f == join.Finalizer {
			t.Errorf("the join's finalizer stays after opting out: %v", h.Finalizers)
		}
	}
	if h.Status.Phase != v1.PhaseActive || !w.cloudClusterExists(name) {
		t.Errorf("opting out touched the cluster: phase %s", h.Status.Phase)
	}
}

// TestUnreachableClusterStillDeletes: a joined cluster whose API server can no longer be reached
// does not keep its hosted Cluster from being deleted: the agent's removal is retried for
// AgentRemovalTimeout (on the join's clock), then the leave goes on with a Warning event, and
// the cloud cluster is deleted. Not parallel: it moves the join's clock.
func TestUnreachableClusterStillDeletes(t *testing.T) {
	joinClock.SetTime(time.Now())
	t.Cleanup(func() { joinClock.SetTime(time.Now()) })
	ctx := t.Context()
	w := newWorld(t, "eks")
	name := "gone-" + suffix()
	c := w.hostedCluster(name)
	c.Spec.Fleet = &v1.FleetJoin{AgentNamespace: "agent-" + name}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = waitJoinedReason(t, w.ns, name, v1.ReasonJoined, 90*time.Second)
	// The cluster's API server moves somewhere drover cannot reach.
	if err := w.eks.SetBackend("us-west-2", name, &simcore.Backend{Name: "nowhere", Endpoint: "https://127.0.0.1:1", CAPEM: backend.CAPEM}); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		h := getHosted(t, w.ns, name)
		if j := fleetCond(h, v1.ConditionJoined); j == nil || j.Reason != v1.ReasonLeaving || !strings.Contains(j.Message, "retrying") {
			return fmt.Errorf("Joined %+v, want Leaving with the removal being retried", j)
		}
		return nil
	})
	if !w.cloudClusterExists(name) {
		t.Fatal("the cloud cluster was deleted while the agent's removal was still being retried")
	}
	joinClock.SetTime(c.CreationTimestamp.Add(time.Hour)) // past AgentRemovalTimeout (1 min here)
	eventually(t, 60*time.Second, func() error {
		if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(c), &v1.Cluster{}); !isGone(err) {
			return fmt.Errorf("hosted Cluster still there: %w", err)
		}
		if w.cloudClusterExists(name) {
			return fmt.Errorf("the cloud cluster still exists")
		}
		return nil
	})
	if n := len(events.find("AgentNotRemoved", name)); n != 1 {
		t.Errorf("%d AgentNotRemoved events, want 1: %v", n, events.find("AgentNotRemoved", name))
	}
}

// TestCredentialsRejected: an AKS cluster whose API server (the downstream) does not accept the
// listed credential — the simulator says the cluster is served by another backend — is reported
// CredentialsRejected, with no fleet Cluster, and joins once the credential is accepted.
func TestCredentialsRejected(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, "aks")
	name := "rejected-" + suffix()
	c := w.hostedCluster(name)
	c.Spec.Fleet = &v1.FleetJoin{AgentNamespace: "agent-" + name, Join: ptr.To(false)}
	if err := mgmt.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	// Before drover joins it, the cluster is "moved": same endpoint, but the downstream's token
	// webhook no longer vouches for its tokens.
	eventually(t, 90*time.Second, func() error {
		if h := getHosted(t, w.ns, name); h.Status.Phase != v1.PhaseActive {
			return fmt.Errorf("phase %s", h.Status.Phase)
		}
		return nil
	})
	if err := w.aks.SetBackend(aksSub, "rg-join", name, &simcore.Backend{Name: "other", Endpoint: backend.Endpoint, CAPEM: backend.CAPEM}); err != nil {
		t.Fatal(err)
	}
	h := getHosted(t, w.ns, name)
	patch := client.MergeFrom(h.DeepCopy())
	h.Spec.Fleet.Join = ptr.To(true)
	if err := mgmt.Client.Patch(ctx, h, patch); err != nil {
		t.Fatal(err)
	}
	c = waitJoinedReason(t, w.ns, name, v1.ReasonCredentialsRejected, 90*time.Second)
	if msg := fleetCond(c, v1.ConditionJoined).Message; !strings.Contains(msg, "401") {
		t.Errorf("CredentialsRejected message %q does not say the API server answered 401", msg)
	}
	if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &fleetv1.Cluster{}); !isGone(err) {
		t.Errorf("fleet Cluster with rejected credentials: %v, want NotFound", err)
	}
	if err := w.aks.SetBackend(aksSub, "rg-join", name, backend); err != nil {
		t.Fatal(err)
	}
	waitJoinedReason(t, w.ns, name, v1.ReasonJoined, 30*time.Second)
}
