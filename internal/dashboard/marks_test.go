package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/server"
	sim "github.com/droverhq/drover/pkg/cloudsim/eks"
	"github.com/droverhq/drover/test/envtest"
)

var fieldRowRE = regexp.MustCompile(`<tr data-field="([^"]+)" data-marks="([^"]*)">`)

// marksOf reads the marks of every field of a cluster page.
func marksOf(page string) map[string]string {
	out := map[string]string{}
	for _, m := range fieldRowRE.FindAllStringSubmatch(page, -1) {
		out[html.UnescapeString(m[1])] = m[2]
	}
	return out
}

// TestFieldMarks drives an EKS cluster through the hosted reconciler against the EKS
// simulator — imported, then partly managed, changed in the console, changed on both sides,
// then enforced — and checks the cluster page marks each field as status and Events record it:
// managed, unmanaged, adopted from the console, conflict with both values, drift reverted.
func TestFieldMarks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := mgmt.Namespace(t)
	_, ts := sim.NewTestServer(t, sim.Options{Delay: -1})
	console := sim.NewClient(ts.URL, "us-west-2", sim.DefaultAccessKeyID, sim.DefaultSecretAccessKey)
	createAll(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"}, StringData: map[string]string{
		eks.KeyAccessKeyID: sim.DefaultAccessKeyID, eks.KeySecretAccessKey: sim.DefaultSecretAccessKey, eks.KeyEndpoint: ts.URL}})
	if _, err := console.CreateCluster(ctx, &awseks.CreateClusterInput{Name: aws.String("shop"), Version: aws.String("1.32"),
		RoleArn: aws.String("arn:aws:iam::123456789012:role/eks"), ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-a", "subnet-b"}},
		Tags: map[string]string{"owner": "terraform"}}); err != nil {
		t.Fatal(err)
	}

	// The reconciler records its Events through the events API, as in drover server.
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: mgmt.Clientset.EventsV1()})
	stop := make(chan struct{})
	broadcaster.StartRecordingToSink(stop)
	t.Cleanup(func() { close(stop); broadcaster.Shutdown() })
	r := &hosted.Reconciler{Client: mgmt.Client, Providers: []hosted.Provider{eks.Provider{}},
		Recorder: broadcaster.NewRecorder(server.Scheme(), "drover-hosted"), RefreshInterval: time.Hour, PollInterval: time.Second}
	key := types.NamespacedName{Namespace: ns, Name: "shop"}
	settle := func() *managementv1alpha1.Cluster {
		t.Helper()
		for range 40 {
			res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			c := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
			if c.Status.Phase == managementv1alpha1.PhaseActive && res.RequeueAfter > time.Minute {
				return c
			}
		}
		t.Fatal("the cluster did not settle")
		return nil
	}
	edit := func(f func(*managementv1alpha1.Cluster)) {
		t.Helper()
		c := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}})
		patch := client.MergeFrom(c.DeepCopy())
		f(c)
		if err := mgmt.Client.Patch(ctx, c, patch); err != nil {
			t.Fatal(err)
		}
	}

	createAll(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: managementv1alpha1.ClusterSpec{EKSConfig: &managementv1alpha1.EKSClusterConfig{DisplayName: "shop", Region: "us-west-2",
			CredentialSecret: "aws", Imported: true}}})
	settle()
	// drover takes over the tags, the log types and private access.
	edit(func(c *managementv1alpha1.Cluster) {
		c.Spec.EKSConfig.Tags = map[string]string{"owner": "terraform", "env": "prod"}
		c.Spec.EKSConfig.LoggingTypes = []string{"api"}
		c.Spec.EKSConfig.PrivateAccess = ptr.To(false)
	})
	settle()
	// Someone adds a log type in the console (adopted) and retags env (in conflict with
	// drover's own change of it).
	if _, err := console.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{Name: aws.String("shop"),
		Logging: &ekstypes.Logging{ClusterLogging: []ekstypes.LogSetup{{Enabled: aws.Bool(true), Types: []ekstypes.LogType{ekstypes.LogTypeApi, ekstypes.LogTypeAudit}}}}}); err != nil {
		t.Fatal(err)
	}
	arn := must(t, &managementv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}).Status.EKSStatus.ARN
	if _, err := console.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: aws.String(arn), Tags: map[string]string{"env": "staging"}}); err != nil {
		t.Fatal(err)
	}
	edit(func(c *managementv1alpha1.Cluster) { c.Spec.EKSConfig.Tags["env"] = "qa" })
	settle()

	srv := serverDashboard(t)
	b := newBrowser(t, srv)
	b.signIn(clusterViewer(t, ns, "operator", patchRule), "")
	path := "/hosted/" + ns + "/shop"
	want := func(field, marks string) func(map[string]string) error {
		return func(got map[string]string) error {
			if got[field] != marks {
				return fmt.Errorf("%s marked %q, want %q", field, got[field], marks)
			}
			return nil
		}
	}
	check := func(what string, page *string, wants ...func(map[string]string) error) {
		t.Helper()
		// Events reach the API server asynchronously: poll the page.
		envtest.Eventually(t, 30*time.Second, func() error {
			*page = b.page(path)
			got := marksOf(*page)
			for _, w := range wants {
				if err := w(got); err != nil {
					return fmt.Errorf("%s: %w (all marks: %v)", what, err, got)
				}
			}
			return nil
		})
	}
	var page string
	check("after the conflict", &page,
		want("eksConfig.tags[owner]", "managed"),
		want("eksConfig.tags[env]", "managed conflict"),
		want("eksConfig.loggingTypes", "managed adopted"),
		want("eksConfig.privateAccess", "managed"),
		want("eksConfig.kubernetesVersion", "unmanaged"),
		want("eksConfig.publicAccess", "unmanaged"))
	// Both values of the conflict, and where the adopted value came from.
	mustContain(t, page, `drover <code>&#34;qa&#34;</code> · provider <code>&#34;staging&#34;</code>`,
		`changed at the provider to [&#34;api&#34;,&#34;audit&#34;] and adopted into the config`)

	// Enforce: a console change of a managed field is rolled back. The refresh that finds it is
	// asked for from the dashboard.
	edit(func(c *managementv1alpha1.Cluster) { c.Spec.SyncPolicy = managementv1alpha1.SyncPolicyEnforce })
	settle()
	if _, err := console.UpdateClusterConfig(ctx, &awseks.UpdateClusterConfigInput{Name: aws.String("shop"),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{EndpointPrivateAccess: aws.Bool(true), EndpointPublicAccess: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	if status, body, _ := b.post(path+"/refresh", url.Values{"csrf": {csrf(t, b.page(path))}}, true); status != http.StatusSeeOther {
		t.Fatalf("refresh now: %d %s", status, body)
	}
	settle()
	check("after the revert", &page,
		want("eksConfig.privateAccess", "managed drift-reverted"),
		want("eksConfig.loggingTypes", "managed adopted"),
		want("eksConfig.tags[env]", "managed"),
		want("eksConfig.kubernetesVersion", "unmanaged"))
	mustContain(t, page, "changed at the provider to true and reverted")
}
