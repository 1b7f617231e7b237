package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
	"github.com/droverhq/drover/internal/agent/manifests"
	"github.com/droverhq/drover/internal/crds"
	regconfig "github.com/droverhq/drover/internal/registration/config"
	"github.com/droverhq/drover/internal/server"
)

// Results of a check, from best to worst.
const (
	checkOK   = "ok"
	checkWarn = "warn" // needs attention; drover itself works
	checkFail = "FAIL" // drover cannot do its job until this is fixed
)

// checkResult is one line of drover check.
type checkResult struct {
	Check  string `json:"check"`
	Result string `json:"result"`
	Detail string `json:"detail"`
}

func newCheckCommand(k *kubeOptions) *cobra.Command {
	var format string
	var strict bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that drover is installed and running, and list what in the fleet needs attention",
		Long: `Check the management cluster as an operator would at 2 a.m.: the API server answers, drover's
CRDs are installed and established (and the admission policy that keeps agents to their own
status report is bound), a drover server replica holds the leader lease, agents
can find the API server (registration settings), and what in the fleet needs attention:
disconnected agents, Bundles and GitRepos that are not ready, failed hosted clusters and
migrations (in every namespace, or in -n NAMESPACE). Each line says where to look next.

Exit 0 when nothing is FAIL (warnings are fleet state, not drover's health), 3 otherwise.
With --strict, also 3 on any warning, including a check your identity may not run: a CI gate
then cannot pass with a token that could check nothing.`,
		Example: `  drover check
  drover check -n team-a -o json
  drover check --strict     # gate: fail on warnings and on checks that could not run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "" && format != "json" {
				return usageErrorf("-o %s: drover check prints a table, or json with -o json", format)
			}
			t, err := k.resolve()
			if err != nil {
				return err
			}
			c, err := client.New(t.Config, client.Options{Scheme: server.Scheme()})
			if err != nil {
				return fmt.Errorf("connect to %s: %w", t.Config.Host, err)
			}
			dc, err := discovery.NewDiscoveryClientForConfig(t.Config)
			if err != nil {
				return fmt.Errorf("connect to %s: %w", t.Config.Host, err)
			}
			ns := ""
			if cmd.Flags().Changed("namespace") {
				ns = t.Namespace
			}
			results := runChecks(cmd.Context(), c, dc, t.Config.Host, ns, time.Now())
			if err := printChecks(cmd.OutOrStdout(), format, results); err != nil {
				return err
			}
			if slices.ContainsFunc(results, func(r checkResult) bool { return r.Result == checkFail }) {
				return withCode(ExitNotReady, fmt.Errorf("drover check: %d of %d checks failed", countResults(results, checkFail), len(results)))
			}
			if n := countResults(results, checkWarn); strict && n > 0 {
				return withCode(ExitNotReady, fmt.Errorf("drover check --strict: %d of %d checks warn", n, len(results)))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "output format: json (default: a table)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 3 on warnings too (and on checks your identity may not run)")
	return cmd
}

// runChecks runs every check; a check that cannot run (the API server down, a read forbidden)
// says so instead of stopping the others.
func runChecks(ctx context.Context, c client.Client, dc discovery.ServerVersionInterface, host, ns string, now time.Time) []checkResult {
	v, err := dc.ServerVersion()
	if err != nil {
		return []checkResult{{"api-server", checkFail, fmt.Sprintf("%s does not answer: %v (check --kubeconfig/--context and the network)", host, err)}}
	}
	results := []checkResult{{"api-server", checkOK, fmt.Sprintf("%s, Kubernetes %s", host, v.GitVersion)}}
	// A mistyped -n would otherwise check an empty namespace and find it healthy.
	if ns != "" {
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			results = append(results, checkResult{"namespace", checkWarn, fmt.Sprintf("namespace %s does not exist: the checks below found nothing in it (check -n)", ns)})
		}
	}
	for _, check := range []struct {
		name string
		run  func() (string, string, error)
	}{
		{"crds", func() (string, string, error) { return checkCRDs(ctx, c) }},
		{"admission-policy", func() (string, string, error) { return checkPolicies(ctx, c) }},
		{"server", func() (string, string, error) { return checkLeader(ctx, c, now) }},
		{"registration", func() (string, string, error) { return checkRegistration(ctx, c) }},
		{"fleet", func() (string, string, error) { return checkFleet(ctx, c, ns) }},
		{"bundles", func() (string, string, error) { return checkBundles(ctx, c, ns) }},
		{"gitrepos", func() (string, string, error) { return checkGitRepos(ctx, c, ns) }},
		{"hosted-clusters", func() (string, string, error) { return checkHosted(ctx, c, ns) }},
		{"migrations", func() (string, string, error) { return checkMigrations(ctx, c, ns) }},
	} {
		result, detail, err := check.run()
		switch {
		case apierrors.IsForbidden(err):
			result, detail = checkWarn, "not checked: your identity may not read this: "+err.Error()
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			result, detail = checkFail, "not checked: drover's CRDs are missing ("+err.Error()+")"
		case err != nil:
			result, detail = checkFail, "not checked: "+err.Error()
		}
		results = append(results, checkResult{check.name, result, detail})
	}
	return results
}

func checkCRDs(ctx context.Context, c client.Client) (string, string, error) {
	want, err := crds.Load()
	if err != nil {
		return "", "", err
	}
	var missing, notEstablished []string
	for _, w := range want {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: w.Name}, crd); apierrors.IsNotFound(err) {
			missing = append(missing, w.Name)
			continue
		} else if err != nil {
			return "", "", err
		}
		established := false
		for _, cond := range crd.Status.Conditions {
			established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
		}
		if !established {
			notEstablished = append(notEstablished, w.Name)
		}
	}
	switch {
	case len(missing) > 0:
		return checkFail, fmt.Sprintf("%d of %d drover CRDs missing: %s (drover server installs them at start unless --install-crds=false; else kubectl apply -f config/crd/bases)",
			len(missing), len(want), strings.Join(missing, ", ")), nil
	case len(notEstablished) > 0:
		return checkFail, fmt.Sprintf("not established: %s (kubectl get crd NAME -o yaml shows why)", strings.Join(notEstablished, ", ")), nil
	}
	return checkOK, fmt.Sprintf("%d drover CRDs installed and established", len(want)), nil
}

// checkPolicies: without drover's admission policy an agent's identity may rewrite every field
// of its Cluster's status, so a missing one is a failure, not a warning.
func checkPolicies(ctx context.Context, c client.Client) (string, string, error) {
	missing, err := crds.MissingPolicies(ctx, c)
	if err != nil {
		return "", "", err
	}
	if len(missing) > 0 {
		return checkFail, fmt.Sprintf("missing: %s; until they are there an agent may rewrite its Cluster's status, not only its own report, and mint tokens of any lifetime, and an import identity may register clusters under another token's name (drover server applies it at start unless --install-crds=false; else kubectl apply -f config/admission; Kubernetes 1.30 or later)",
			strings.Join(missing, ", ")), nil
	}
	warnings, err := crds.TypeCheckWarnings(ctx, c)
	if err != nil {
		return "", "", err
	}
	if len(warnings) > 0 {
		return checkFail, "the cluster's type checker warns: " + strings.Join(warnings, "; ") + " (the policy may refuse agents' check-ins; compare with config/admission of this drover version)", nil
	}
	p, err := crds.LoadPolicies()
	if err != nil {
		return "", "", err
	}
	names := make([]string, 0, len(p.Policies))
	for _, o := range p.Policies {
		names = append(names, o.Name)
	}
	return checkOK, fmt.Sprintf("%s installed and bound: agents may write only their own status report and mint only bounded tokens, import identities register only with their own token", strings.Join(names, ", ")), nil
}

func checkLeader(ctx context.Context, c client.Client, now time.Time) (string, string, error) {
	l := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: server.SystemNamespace, Name: server.LeaderElectionID}, l)
	if apierrors.IsNotFound(err) {
		return checkFail, fmt.Sprintf("no drover server has run here: no Lease %s/%s (install it: docs/install.md)", server.SystemNamespace, server.LeaderElectionID), nil
	}
	if err != nil {
		return "", "", err
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder == "" || l.Spec.RenewTime == nil {
		return checkFail, fmt.Sprintf("no drover server is running: the last leader released Lease %s/%s (kubectl -n %s get pods)", server.SystemNamespace, server.LeaderElectionID, server.SystemNamespace), nil
	}
	duration := 15 * time.Second
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	age := now.Sub(l.Spec.RenewTime.Time).Truncate(time.Second)
	if age > duration {
		return checkFail, fmt.Sprintf("leader %s last renewed its lease %s ago (lease: %s): no replica is leading (kubectl -n %s get pods; kubectl -n %s logs deploy/drover)",
			holder, age, duration, server.SystemNamespace, server.SystemNamespace), nil
	}
	return checkOK, fmt.Sprintf("leader %s, lease renewed %s ago", holder, max(age, 0)), nil
}

func checkRegistration(ctx context.Context, c client.Client) (string, string, error) {
	ref := regconfig.DefaultRef
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, cm); apierrors.IsNotFound(err) {
		return checkFail, fmt.Sprintf("no ConfigMap %s/%s: agents cannot find the API server (drover server writes it from --api-server-url; the chart from apiServerURL)", ref.Namespace, ref.Name), nil
	} else if err != nil {
		return "", "", err
	}
	url := cm.Data[regconfig.KeyAPIServerURL]
	if url == "" {
		return checkFail, fmt.Sprintf("ConfigMap %s/%s has no %s: agents cannot register (helm upgrade --set apiServerURL=https://...; docs/install.md)", ref.Namespace, ref.Name, regconfig.KeyAPIServerURL), nil
	}
	if loopbackURL(url) {
		return checkWarn, "agents register at " + url + ", a loopback address: " + loopbackAdvice, nil
	}
	return checkOK, "agents register at " + url, nil
}

// loopbackAdvice says what to do about a loopback registration endpoint.
const loopbackAdvice = "only an agent on this machine reaches it. For clusters elsewhere, start the embedded drover server with " +
	"--advertise-address set to an IP address of this machine that they reach, or install drover into a cluster (README: Install into your own cluster)"

// loopbackURL: the URL's host is localhost or a loopback address, which no other machine's
// agent reaches (the embedded control plane of `make run` serves on 127.0.0.1).
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func checkFleet(ctx context.Context, c client.Client, ns string) (string, string, error) {
	var l fleetv1alpha1.ClusterList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	var disconnected, unreachable, waiting []string
	versions := map[string]int{} // of the agents that checked in
	for i := range l.Items {
		cl := &l.Items[i]
		if cl.Status.Agent.LastSeen != nil {
			versions[manifests.AgentVersion(cl)]++
		}
		switch {
		case cl.Status.Agent.LastSeen == nil:
			waiting = append(waiting, qualified(cl.Namespace, cl.Name, ns))
		case !connected(cl):
			disconnected = append(disconnected, qualified(cl.Namespace, cl.Name, ns))
		case cl.Status.Agent.DownstreamError != "":
			unreachable = append(unreachable, qualified(cl.Namespace, cl.Name, ns))
		}
	}
	// Several agent versions: an upgrade on its way, or agents it did not reach.
	mixed := ""
	if len(versions) > 1 {
		var vs []string
		for v, n := range versions {
			vs = append(vs, fmt.Sprintf("%s (%d)", v, n))
		}
		slices.Sort(vs)
		mixed = "; agents run " + strings.Join(vs, ", ")
	}
	if len(disconnected)+len(unreachable)+len(waiting) == 0 {
		if len(l.Items) == 0 {
			return checkOK, "no registered clusters", nil
		}
		return checkOK, fmt.Sprintf("%s, all connected%s", plural(len(l.Items), "registered cluster"), mixed), nil
	}
	var parts []string
	if len(disconnected) > 0 {
		parts = append(parts, fmt.Sprintf("%d disconnected: %s", len(disconnected), names(disconnected)))
	}
	if len(unreachable) > 0 {
		parts = append(parts, fmt.Sprintf("%d whose agent cannot reach their API server: %s", len(unreachable), names(unreachable)))
	}
	if len(waiting) > 0 {
		parts = append(parts, fmt.Sprintf("%d never checked in: %s", len(waiting), names(waiting)))
	}
	hint := "drover fleet get NAME -n NAMESPACE"
	if ns != "" {
		hint = "drover fleet get NAME -n " + ns
	}
	return checkWarn, fmt.Sprintf("%s; %s (%s)%s", plural(len(l.Items), "registered cluster"), strings.Join(parts, "; "), hint, mixed), nil
}

func checkBundles(ctx context.Context, c client.Client, ns string) (string, string, error) {
	var l fleetv1alpha1.BundleList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	bad := failing(l.Items, ns, func(b *fleetv1alpha1.Bundle) string {
		// Pending is a rollout on its way, not trouble.
		if cond := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionReady); cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason != fleetv1alpha1.ReasonPending {
			return cond.Reason
		}
		// Ready on no cluster is most often a mistyped --cluster or a selector matching nothing.
		if b.Status.ObservedGeneration == b.Generation && b.Generation > 0 && b.Status.Summary.DesiredReady == 0 {
			return "TargetsNoCluster"
		}
		return ""
	})
	return verdict(len(l.Items), bad, "Bundles", "failing", "not ready", "drover bundle status NAME", ns)
}

func checkGitRepos(ctx context.Context, c client.Client, ns string) (string, string, error) {
	var l fleetv1alpha1.GitRepoList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	bad := failing(l.Items, ns, func(g *fleetv1alpha1.GitRepo) string {
		if cond := meta.FindStatusCondition(g.Status.Conditions, fleetv1alpha1.ConditionReady); cond != nil && cond.Status == metav1.ConditionFalse {
			return cond.Reason
		}
		// Ready, yet deploying nowhere or not as the repository says: what a Fleet user's
		// repository (no GitRepo targets, fleet.yaml keys drover ignores) most often meets.
		if len(g.Spec.Targets) == 0 {
			return "NoTargets"
		}
		if g.Status.ObservedGeneration == g.Generation && len(g.Status.Bundles) > 0 && !slices.ContainsFunc(g.Status.Bundles, func(b fleetv1alpha1.GitRepoBundle) bool { return b.DesiredReady > 0 }) {
			return "TargetsNoCluster"
		}
		if cond := meta.FindStatusCondition(g.Status.Conditions, fleetv1alpha1.ConditionConfigSupported); cond != nil && cond.Status == metav1.ConditionFalse {
			return cond.Reason
		}
		return ""
	})
	return verdict(len(l.Items), bad, "GitRepos", "failing or deploying nowhere", "need attention", "drover gitrepo get NAME", ns)
}

func checkHosted(ctx context.Context, c client.Client, ns string) (string, string, error) {
	var l managementv1alpha1.ClusterList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	bad := failing(l.Items, ns, func(h *managementv1alpha1.Cluster) string {
		if h.Status.Phase == managementv1alpha1.PhaseFailed {
			return "failed"
		}
		// Refused: it names someone else's cluster at the provider, and waits for a decision.
		if r := meta.FindStatusCondition(h.Status.Conditions, managementv1alpha1.ConditionReady); r != nil && r.Reason == managementv1alpha1.ReasonAlreadyExists {
			return r.Reason
		}
		// Credentials the provider rejects (or a missing, incomplete Secret): drover cannot
		// read or change the cluster, whatever its last known phase says.
		if cv := meta.FindStatusCondition(h.Status.Conditions, managementv1alpha1.ConditionCredentialsValid); cv != nil && cv.Status == metav1.ConditionFalse {
			return managementv1alpha1.ConditionCredentialsValid + " " + cv.Reason
		}
		// An active cluster that should be in the fleet and is not gets no Bundle.
		if place, joined := h.FleetPlace(); place == managementv1alpha1.FleetPlaceNotJoined {
			return joined.Reason
		}
		return ""
	})
	return verdict(len(l.Items), bad, "hosted clusters", "failed, without valid credentials or unable to join the fleet", "failed, lack valid credentials or cannot join the fleet", "drover cluster get NAME", ns)
}

func checkMigrations(ctx context.Context, c client.Client, ns string) (string, string, error) {
	var l migrationv1alpha1.CloudProviderMigrationList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return "", "", err
	}
	bad := failing(l.Items, ns, func(m *migrationv1alpha1.CloudProviderMigration) string {
		return when(m.Status.Phase == migrationv1alpha1.PhaseFailed)
	})
	return verdict(len(l.Items), bad, "migrations", "failed", "failed", "drover migrate get NAME", ns)
}

// failing names the items for which why says something ("-" for no detail), with the detail
// in parentheses.
func failing[T any, PT interface {
	*T
	client.Object
}](items []T, ns string, why func(PT) string) []string {
	var out []string
	for i := range items {
		o := PT(&items[i])
		switch w := why(o); w {
		case "":
		case "-":
			out = append(out, qualified(o.GetNamespace(), o.GetName(), ns))
		default:
			out = append(out, qualified(o.GetNamespace(), o.GetName(), ns)+" ("+w+")")
		}
	}
	return out
}

// when is failing's "-" when bad.
func when(bad bool) string {
	if bad {
		return "-"
	}
	return ""
}

// verdict is a warning naming the bad ones, or ok.
func verdict(total int, bad []string, noun, noneAre, are, hint, ns string) (string, string, error) {
	if len(bad) == 0 {
		if total == 1 {
			noun = strings.TrimSuffix(noun, "s")
		}
		return checkOK, fmt.Sprintf("%d %s, none %s", total, noun, noneAre), nil
	}
	// The hint runs as printed: in the namespace checked, or the one each name gives (ns/name).
	if ns == "" {
		hint += " -n NAMESPACE"
	} else {
		hint += " -n " + ns
	}
	return checkWarn, fmt.Sprintf("%d of %d %s %s: %s (%s)", len(bad), total, noun, are, names(bad), hint), nil
}

// qualified is namespace/name when checking every namespace, else the name.
func qualified(namespace, name, scope string) string {
	if scope != "" {
		return name
	}
	return namespace + "/" + name
}

// names lists at most 5 names, then how many more.
func names(all []string) string {
	slices.Sort(all)
	if len(all) <= 5 {
		return strings.Join(all, ", ")
	}
	return strings.Join(all[:5], ", ") + fmt.Sprintf(" and %d more", len(all)-5)
}

func countResults(results []checkResult, result string) int {
	n := 0
	for _, r := range results {
		if r.Result == result {
			n++
		}
	}
	return n
}

func printChecks(w io.Writer, format string, results []checkResult) error {
	if format == "json" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, r.Result, r.Detail)
	}
	return tw.Flush()
}
