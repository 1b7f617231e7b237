package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/agent"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/hosted"
	hostedaks "github.com/droverhq/drover/internal/hosted/aks"
	hostedeks "github.com/droverhq/drover/internal/hosted/eks"
	hostedgke "github.com/droverhq/drover/internal/hosted/gke"
	"github.com/droverhq/drover/internal/hosted/join"
	"github.com/droverhq/drover/internal/server"
	eksim "github.com/droverhq/drover/pkg/cloudsim/eks"
)

// The demo's objects, in Namespace.
const (
	// HostedAdopted is the EKS cluster with a tag added in the "console" (the simulator's API,
	// through the AWS SDK) and adopted into its config.
	HostedAdopted = "shop-eks"
	// HostedConflict is the EKS cluster whose tag was changed in the console and in drover at
	// once: Conflict=True, drover's value wins.
	HostedConflict = "billing-eks"
	// HostedAKS and HostedGKE are the AKS and GKE clusters nobody touched.
	HostedAKS = "payments-aks"
	HostedGKE = "analytics-gke"
	// Bundle is the sample Bundle deployed to every demo fleet cluster.
	Bundle = "hello-web"

	// AdoptedTag is the tag the console adds to HostedAdopted; ConflictTag the one changed on
	// both sides of HostedConflict.
	// (A conflict needs a field both sides changed from the value of the last sync: a tag
	// added on both sides is drover's to push.)
	AdoptedTag, AdoptedValue = "cost-center", "console-4711"
	ConflictTag              = "team"
	ConflictConsole          = "finance"
	ConflictDrover           = "billing-platform"

	eksRegion     = "us-west-2"
	aksGroup      = "rg-demo"
	aksLocation   = "westeurope"
	gkeRegion     = "us-central1"
	fleetLabel    = "env"
	fleetLabelVal = "demo"
)

// DownstreamNames are the demo's fleet clusters.
func DownstreamNames() []string { return append([]string(nil), downstreamNames...) }

// HostedNames are the demo's hosted clusters.
func HostedNames() []string { return []string{HostedAdopted, HostedConflict, HostedAKS, HostedGKE} }

// run builds the world in the management cluster at cfg, prints the summary once everything is
// ready and returns (the agents keep running until ctx ends).
func (d *Demo) run(ctx context.Context, cfg *rest.Config) error {
	log := ctrl.LoggerFrom(ctx).WithName("demo")
	ctx = ctrl.LoggerInto(ctx, log)
	c, err := client.New(cfg, client.Options{Scheme: server.Scheme()})
	if err != nil {
		return fmt.Errorf("management client: %w", err)
	}
	if err := d.createHosted(ctx, c); err != nil {
		return err
	}
	if err := installProvisioningCRD(ctx, c); err != nil {
		return err
	}
	if err := create(ctx, c, sampleBundle()); err != nil {
		return err
	}
	if err := create(ctx, c, providerBundle()); err != nil {
		return err
	}
	if d.git != nil {
		if err := create(ctx, c, d.git.gitRepo()); err != nil {
			return err
		}
	}

	// The console changes, each once its cluster is active; the downstream clusters as they come up.
	errs := make(chan error, 3+len(downstreamNames))
	go func() { errs <- d.adoptConsoleTag(ctx, c) }()
	go func() { errs <- d.conflictingTag(ctx, c) }()
	go func() {
		select {
		case <-d.backingUp:
		case <-ctx.Done():
			errs <- nil
			return
		}
		d.mu.Lock()
		ds, err := d.joined, d.joinedErr
		d.mu.Unlock()
		if err != nil {
			errs <- err
			return
		}
		errs <- d.joinHosted(ctx, c, ds)
	}()
	for i := range downstreamNames {
		var r downstreamResult
		select {
		case r = <-d.downstreams:
		case <-ctx.Done():
			return nil
		}
		d.mu.Lock()
		d.clusters = append(d.clusters, r.ds)
		d.mu.Unlock()
		if r.err != nil {
			return r.err
		}
		go func() { errs <- d.importDownstream(ctx, c, r.ds, i+1) }()
	}
	for range 3 + len(downstreamNames) {
		select {
		case err := <-errs:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
	if err := waitFor(ctx, 5*time.Minute, func() error { return Ready(ctx, c) }); err != nil {
		return err
	}
	d.summary()
	d.agents.Add(1)
	go func() {
		defer d.agents.Done()
		d.reportMigrations(ctx, c)
	}()
	return nil
}

// Ready returns nil once the demo's world is in the state it promises: every hosted cluster
// active, the console tag adopted into shop-eks's config, billing-eks Conflict=True, every fleet
// cluster Ready with its agent checked in, the sample Bundle ready on all of them, and both
// cloud-provider migrations under way (the demo prints a line when each finishes).
func Ready(ctx context.Context, c client.Reader) error {
	for _, name := range HostedNames() {
		h := &v1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, h); err != nil {
			return err
		}
		if h.Status.Phase != v1.PhaseActive {
			return fmt.Errorf("hosted cluster %s is %q, not active", name, h.Status.Phase)
		}
		switch name {
		case HostedAdopted:
			if got := h.Spec.EKSConfig.Tags[AdoptedTag]; got != AdoptedValue {
				return fmt.Errorf("%s: the console's tag %s is not adopted yet (config has %q)", name, AdoptedTag, got)
			}
		case HostedConflict:
			if !meta.IsStatusConditionTrue(h.Status.Conditions, v1.ConditionConflict) {
				return fmt.Errorf("%s: no conflict reported yet", name)
			}
		}
	}
	for _, name := range downstreamNames {
		fc := &fleetv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, fc); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(fc.Status.Conditions, fleetv1.ConditionReady) || fc.Status.Agent.LastSeen == nil {
			return fmt.Errorf("fleet cluster %s is not Ready with its agent yet", name)
		}
	}
	b := &fleetv1.Bundle{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: Bundle}, b); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1.ConditionReady) || b.Status.Summary.Ready != len(downstreamNames) {
		return fmt.Errorf("bundle %s: ready on %d of %d clusters", Bundle, b.Status.Summary.Ready, len(downstreamNames))
	}
	if err := joinedReady(ctx, c); err != nil {
		return err
	}
	gr := &fleetv1.GitRepo{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: GitRepoName}, gr); {
	case apierrors.IsNotFound(err): // no git here
	case err != nil:
		return err
	case !meta.IsStatusConditionTrue(gr.Status.Conditions, fleetv1.ConditionReady) || gr.Status.Summary.ReadyBundles != 1:
		return fmt.Errorf("GitRepo %s is not ready on every cluster yet", GitRepoName)
	}
	return migrationsUnderWay(ctx, c)
}

func (d *Demo) summary() {
	dir := d.o.DataDir
	var b strings.Builder
	fmt.Fprintf(&b, "Demo ready in %s:\n", time.Since(d.start).Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  hosted clusters (namespace %s): %s (EKS, tag %s adopted from the console), %s (EKS, tag %s changed on both sides: a conflict), %s (AKS), %s (GKE)\n",
		Namespace, HostedAdopted, AdoptedTag, HostedConflict, ConflictTag, HostedAKS, HostedGKE)
	fmt.Fprintf(&b, "  fleet clusters: %s (kwok nodes; their agents run in this process)\n", strings.Join(downstreamNames, ", "))
	fmt.Fprintf(&b, "  Bundle %s: ready on %s\n", Bundle, strings.Join(downstreamNames, " and "))
	fmt.Fprintf(&b, "  %s joined the fleet by itself (an EKS token, checked by its API server through the simulator; agent deployed by drover), and Bundle %s, for every cluster labelled %s=eks, is ready on it\n",
		HostedJoined, ProviderBundle, join.LabelProvider)
	if d.git != nil {
		fmt.Fprintf(&b, "  GitRepo %s (a repository git serves on this machine, %s): its path %s deployed as a Bundle to every fleet cluster, %s included\n",
			GitRepoName, d.git.url, GitRepoPath, HostedJoined)
	}
	fmt.Fprintf(&b, "  cloud-provider migrations from the in-tree AWS provider to the AWS CCM (the fleet clusters play RKE2 on AWS, simulated by pkg/distsim): %s runs its 7 steps to Succeeded (upgrading to %s), %s stops at step 4 SwitchProvider (the CCM may not manage load balancers); watch them on the dashboard's Migrations page\n",
		MigrationSucceeds, MigrationVersion, MigrationFails)
	dr, kc := d.o.Drover, d.o.Kubectl
	if dr == "" {
		dr = "drover"
	}
	if kc == "" {
		kc = "kubectl"
	}
	fmt.Fprintf(&b, "Look at it:\n  export KUBECONFIG=%s/kubeconfig\n", dir)
	fmt.Fprintf(&b, "  %s cluster list -n %s; %s cluster get %s -n %s\n", dr, Namespace, dr, HostedConflict, Namespace)
	fmt.Fprintf(&b, "  %s fleet list -n %s; %s bundle status %s -n %s\n", dr, Namespace, dr, Bundle, Namespace)
	if d.git != nil {
		fmt.Fprintf(&b, "  %s gitrepo get %s -n %s\n", dr, GitRepoName, Namespace)
	}
	fmt.Fprintf(&b, "  %s migrate list -n %s; %s migrate get %s -n %s\n", dr, Namespace, dr, MigrationFails, Namespace)
	fmt.Fprintf(&b, "  %s get events -n %s\n", kc, Namespace)
	fmt.Fprintf(&b, "  %s --kubeconfig %s/demo/%s/kubeconfig get pods -A   (a downstream cluster)\n", kc, dir, downstreamNames[0])
	fmt.Fprintf(&b, "  %s cluster get %s -n %s   (its place in the fleet); %s --kubeconfig %s/demo/%s/kubeconfig get configmaps -n eks-hello\n",
		dr, HostedJoined, Namespace, kc, dir, HostedJoined)
	for _, l := range d.o.Links {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "Ctrl-C stops everything and deletes %s.\n", dir)
	fmt.Fprint(d.o.Out, b.String())
}

// createHosted writes the credential Secrets and the hosted clusters. They stay out of the fleet
// (spec.fleet.join: false): the simulators' clusters have no Kubernetes API behind them here,
// but for HostedJoined, which joinHosted lets join once its API server is up.
func (d *Demo) createHosted(ctx context.Context, c client.Client) error {
	if err := create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return err
	}
	s := d.sims
	secrets := map[string]map[string]string{
		"aws": {hostedeks.KeyAccessKeyID: eksim.DefaultAccessKeyID, hostedeks.KeySecretAccessKey: eksim.DefaultSecretAccessKey, hostedeks.KeyEndpoint: s.eksURL},
		"azure": {hostedaks.KeyTenantID: azureTenant, hostedaks.KeySubscriptionID: azureSubscription, hostedaks.KeyClientID: azureClient,
			hostedaks.KeyClientSecret: azureSecret, hostedaks.KeyAuthorityHost: s.aks.URL(), hostedaks.KeyResourceManagerEndpoint: s.aks.URL(),
			hostedaks.KeyCAPEM: string(s.aks.CAPEM())},
		"gcp": {hostedgke.KeyServiceAccountJSON: string(s.gkeKey), hostedgke.KeyEndpoint: s.gkeURL},
	}
	for name, data := range secrets {
		if err := create(ctx, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}, StringData: data}); err != nil {
			return err
		}
	}
	noJoin := &v1.FleetJoin{Join: ptr.To(false)}
	meta := func(name, team string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{"team": team}}
	}
	eksCluster := func(name, team string) *v1.Cluster {
		return &v1.Cluster{ObjectMeta: meta(name, team), Spec: v1.ClusterSpec{Fleet: noJoin, EKSConfig: &v1.EKSClusterConfig{
			DisplayName: name, Region: eksRegion, CredentialSecret: "aws",
			KubernetesVersion: ptr.To("1.33"), ServiceRole: ptr.To("arn:aws:iam::123456789012:role/eks"),
			Subnets: []string{"subnet-a", "subnet-b"}, Tags: map[string]string{"team": team},
			PublicAccess: ptr.To(true), PrivateAccess: ptr.To(false), LoggingTypes: []string{"api"},
			NodeGroups: []v1.EKSNodeGroup{{Name: "general", NodeRole: ptr.To("arn:aws:iam::123456789012:role/node"),
				DesiredSize: ptr.To[int32](2), MinSize: ptr.To[int32](1), MaxSize: ptr.To[int32](4)}},
		}}}
	}
	clusters := []*v1.Cluster{
		eksCluster(HostedAdopted, "shop"),
		eksCluster(HostedConflict, "billing"),
		{ObjectMeta: meta(HostedAKS, "payments"), Spec: v1.ClusterSpec{Fleet: noJoin, AKSConfig: &v1.AKSClusterConfig{
			ClusterName: HostedAKS, ResourceGroup: aksGroup, ResourceLocation: aksLocation, CredentialSecret: "azure",
			KubernetesVersion: ptr.To("1.33"), DNSPrefix: ptr.To(HostedAKS), Tags: map[string]string{"team": "payments"},
			NodePools: []v1.AKSNodePool{{Name: "system", Mode: ptr.To(hostedaks.ModeSystem), Count: ptr.To[int32](2)}},
		}}},
		{ObjectMeta: meta(HostedGKE, "analytics"), Spec: v1.ClusterSpec{Fleet: noJoin, GKEConfig: &v1.GKEClusterConfig{
			ClusterName: HostedGKE, ProjectID: gcpProject, Region: gkeRegion, CredentialSecret: "gcp",
			KubernetesVersion: ptr.To("1.33"), Labels: map[string]string{"team": "analytics"},
			NodePools: []v1.GKENodePool{{Name: "pool-1", InitialNodeCount: ptr.To[int64](2),
				Autoscaling: &v1.GKENodePoolAutoscaling{Enabled: ptr.To(false), MinNodeCount: ptr.To[int64](1), MaxNodeCount: ptr.To[int64](3)}}},
		}}},
	}
	for _, h := range clusters {
		if err := create(ctx, c, h); err != nil {
			return err
		}
	}
	return nil
}

// waitActive waits until the hosted cluster name is active and drover has nothing in progress.
func waitActive(ctx context.Context, c client.Client, name string) (*v1.Cluster, error) {
	h := &v1.Cluster{}
	err := waitFor(ctx, 3*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, h); err != nil {
			return err
		}
		if h.Status.Phase != v1.PhaseActive || !meta.IsStatusConditionTrue(h.Status.Conditions, hosted.CondSynced) {
			return fmt.Errorf("hosted cluster %s is %q, not active and synced", name, h.Status.Phase)
		}
		return nil
	})
	return h, err
}

// adoptConsoleTag adds a tag to shop-eks in the "console" (the AWS SDK, straight at the
// simulator), then asks drover to refresh: drover adopts it into the config (an Adopted Event).
func (d *Demo) adoptConsoleTag(ctx context.Context, c client.Client) error {
	h, err := waitActive(ctx, c, HostedAdopted)
	if err != nil {
		return err
	}
	if err := d.consoleTag(ctx, HostedAdopted, AdoptedTag, AdoptedValue); err != nil {
		return err
	}
	patch := client.MergeFrom(h.DeepCopy())
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[hosted.RefreshAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := c.Patch(ctx, h, patch); err != nil {
		return fmt.Errorf("ask drover to refresh %s: %w", HostedAdopted, err)
	}
	return nil
}

// conflictingTag changes the same tag of billing-eks in the "console" (the AWS SDK) and in
// drover's config: drover reports Conflict=True with both values and applies its own. (EKS tags
// change synchronously, so drover cannot mistake the console's change for an update of its own
// still running, whose result it would adopt.)
func (d *Demo) conflictingTag(ctx context.Context, c client.Client) error {
	h, err := waitActive(ctx, c, HostedConflict)
	if err != nil {
		return err
	}
	if err := d.consoleTag(ctx, HostedConflict, ConflictTag, ConflictConsole); err != nil {
		return err
	}
	patch := client.MergeFrom(h.DeepCopy())
	h.Spec.EKSConfig.Tags = maps.Clone(h.Spec.EKSConfig.Tags)
	h.Spec.EKSConfig.Tags[ConflictTag] = ConflictDrover
	if err := c.Patch(ctx, h, patch); err != nil {
		return fmt.Errorf("change %s's tag in drover: %w", HostedConflict, err)
	}
	return nil
}

// consoleTag tags the EKS cluster name through the AWS SDK, straight at the simulator, as
// someone in the AWS console would.
func (d *Demo) consoleTag(ctx context.Context, name, key, value string) error {
	console := eksim.NewClient(d.sims.eksURL, eksRegion, eksim.DefaultAccessKeyID, eksim.DefaultSecretAccessKey)
	out, err := console.DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: ptr.To(name)})
	if err != nil {
		return fmt.Errorf("console: describe %s: %w", name, err)
	}
	if _, err := console.TagResource(ctx, &awseks.TagResourceInput{ResourceArn: out.Cluster.Arn, Tags: map[string]string{key: value}}); err != nil {
		return fmt.Errorf("console: tag %s: %w", name, err)
	}
	return nil
}

// importDownstream makes the downstream cluster an RKE2 cluster on AWS (simulateRKE2: kwok
// nodes named after EC2 instances), imports it into the fleet (a kubeconfig Secret and a fleet
// Cluster: drover deploys the agent), starts its cloud-provider migration and runs its agent in
// this process, as the kubelet would run the agent's pod. octet tells its nodes apart.
func (d *Demo) importDownstream(ctx context.Context, c client.Client, ds *downstream, octet int) error {
	down, err := client.New(ds.config, client.Options{Scheme: server.Scheme()})
	if err != nil {
		return fmt.Errorf("client for %s: %w", ds.name, err)
	}
	if err := d.simulateRKE2(ctx, c, down, ds, octet); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ds.name + "-kubeconfig"},
		Data: map[string][]byte{fleetv1.KeyKubeconfig: ds.kubeconfig}}
	if err := create(ctx, c, secret); err != nil {
		return err
	}
	fc := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ds.name,
		Labels: map[string]string{fleetLabel: fleetLabelVal, "site": ds.name}},
		Spec: fleetv1.ClusterSpec{KubeConfigSecret: secret.Name}}
	if err := create(ctx, c, fc); err != nil {
		return err
	}
	if err := startMigration(ctx, c, down, ds, secret.Name); err != nil {
		return err
	}
	// Start the agent once drover has deployed it (its bootstrap Secret is there).
	if err := waitFor(ctx, 2*time.Minute, func() error {
		return down.Get(ctx, client.ObjectKey{Namespace: manifests.DefaultNamespace, Name: manifests.BootstrapSecret}, &corev1.Secret{})
	}); err != nil {
		return fmt.Errorf("drover did not deploy the agent of %s: %w", ds.name, err)
	}
	d.agents.Add(1)
	go func() {
		defer d.agents.Done()
		actx := ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithName("agent").WithValues("cluster", ds.name))
		_ = agent.Run(actx, agent.Options{Config: ds.config, Namespace: manifests.DefaultNamespace, Identity: "demo-" + ds.name,
			HeartbeatInterval: d.o.AgentHeartbeat, RetryMin: time.Second, RetryMax: 5 * time.Second})
	}()
	return nil
}

// sampleBundle is a small web app for every demo fleet cluster: a Namespace, a ConfigMap, a
// Deployment of two replicas (kwok runs them) and a Service.
func sampleBundle() *fleetv1.Bundle {
	labels := map[string]string{"app": Bundle}
	objs := []k8sruntime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "hello"}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "hello", Name: "greeting"},
			Data: map[string]string{"message": "Hello from drover's demo"}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Namespace: "hello", Name: "web", Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "greeting"}}}}}},
				}}}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Namespace: "hello", Name: "web"},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}},
	}
	resources := raw(objs)
	return &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Bundle},
		Spec: fleetv1.BundleSpec{Resources: resources, CorrectDrift: true,
			Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetLabel: fleetLabelVal}}}}}}
}

// raw is objs as a Bundle's resources.
func raw(objs []k8sruntime.Object) []k8sruntime.RawExtension {
	var resources []k8sruntime.RawExtension
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			panic(err) // programming error: these objects always marshal
		}
		resources = append(resources, k8sruntime.RawExtension{Raw: b})
	}
	return resources
}

// create creates o; one that exists already is fine.
func create(ctx context.Context, c client.Client, o client.Object) error {
	if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %T %s: %w", o, client.ObjectKeyFromObject(o), err)
	}
	return nil
}

// waitFor polls cond every 200 ms until it returns nil, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %s: %w", timeout, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}
