package rbac

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/droverhq/drover/test/envtest"
)

// TestServerRightsAreListed asks the API server what drover's ServiceAccount may do: no
// wildcard anywhere, and its cluster-wide rights are exactly those docs/install.md lists.
func TestServerRightsAreListed(t *testing.T) {
	t.Parallel()
	cs, err := kubernetes.NewForConfig(serverConfig)
	if err != nil {
		t.Fatal(err)
	}
	rules := func(ns string) map[string][]string {
		review, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(t.Context(),
			&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Incomplete {
			t.Fatalf("rules review of %s incomplete: %s", ns, review.Status.EvaluationError)
		}
		rights := map[string][]string{}
		for _, r := range review.Status.ResourceRules {
			for _, v := range append(append(slices.Clone(r.Verbs), r.Resources...), r.APIGroups...) {
				if strings.Contains(v, "*") {
					t.Errorf("wildcard in a rule of drover's ServiceAccount in %s: %+v", ns, r)
				}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if everyone(g, res) {
						continue
					}
					key := res
					if g != "" {
						key = g + "/" + res
					}
					rights[key] = union(rights[key], r.Verbs)
				}
			}
		}
		return rights
	}
	_ = rules(serverNamespace) // wildcards only: the namespace Role is described in prose

	// In a namespace drover has no Role in, the rights are the cluster-wide ones.
	got := rules(cluster.Namespace(t))
	want := documentedRights(t)
	var diff []string
	for _, k := range sortedKeys(got, want) {
		if g, w := strings.Join(got[k], ", "), strings.Join(want[k], ", "); g != w {
			diff = append(diff, fmt.Sprintf("| `%s` | %s | (docs/install.md says %q)", k, g, w))
		}
	}
	if len(diff) > 0 {
		t.Errorf("drover's cluster-wide rights differ from the \"Cluster-wide rights\" table of docs/install.md; the rights held are:\n%s",
			strings.Join(diff, "\n"))
	}
	if len(got["secrets"]) == 0 {
		t.Error("no Secrets right found: is the review looking at drover's ServiceAccount?")
	}
}

// everyone reports the rights every authenticated user has (system:basic-user, and reading
// ClusterTrustBundles).
func everyone(group, resource string) bool {
	return (group == "authorization.k8s.io" || group == "authentication.k8s.io") && strings.HasPrefix(resource, "selfsubject") ||
		group == "certificates.k8s.io" && resource == "clustertrustbundles"
}

var cellItem = regexp.MustCompile("`([^`]+)`")

// documentedRights parses the "Cluster-wide rights" table of docs/install.md: resources in
// backquotes in the first cell, verbs in the second.
func documentedRights(t *testing.T) map[string][]string {
	t.Helper()
	table, err := envtest.DocTable(filepath.Join(envtest.RepoRoot(), "docs", "install.md"), "Cluster-wide rights")
	if err != nil {
		t.Fatal(err)
	}
	rights := map[string][]string{}
	for _, cells := range table {
		if len(cells) < 4 {
			t.Fatalf("docs/install.md: malformed row %q", strings.Join(cells, "|"))
		}
		var verbs []string
		for _, v := range strings.Split(cells[2], ",") {
			verbs = append(verbs, strings.TrimSpace(v))
		}
		for _, m := range cellItem.FindAllStringSubmatch(cells[1], -1) {
			rights[m[1]] = union(rights[m[1]], verbs)
		}
	}
	return rights
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(ms ...map[string][]string) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
