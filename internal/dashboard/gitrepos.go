package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/text"
)

// gitRepoView is one GitRepo on the GitRepos page.
type gitRepoView struct {
	Namespace, Name string
	// Repo is spec.repo with any password in it masked.
	Repo string
	// Wants is the revision followed (GitRepoSpec.Follows).
	Wants string
	Paths []string
	// Commit is the commit deployed (the last good one); Short its first 12 digits.
	Commit, Short string
	// State is what the page shows first: ready, notready, error, paused or pending.
	State string
	// Synced and Ready are the conditions (nil before the first sync).
	Synced, Ready *metav1.Condition
	Bundles       []fleetv1alpha1.GitRepoBundle
	BundlesReady  int
	// BundlesLink shows the Bundles in the clusters × Bundles matrix.
	BundlesLink         string
	Paused, CanPause    bool
	PausePath           string
	Polling             string
	ClientSecret, Error string
}

const (
	gitStateReady    = "ready"
	gitStateNotReady = "notready"
	gitStateError    = "error"
	gitStatePaused   = "paused"
	gitStatePending  = "pending"
)

func listGitRepos(ctx context.Context, s *scope) ([]fleetv1alpha1.GitRepo, listInfo, error) {
	return listScoped[fleetv1alpha1.GitRepo](ctx, s, "gitrepos", "GitRepos", "")
}

func (h *Handler) gitRepos(ctx context.Context, r *http.Request, v *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "GitRepos", "gitrepos"
	f := newFilter(r, l, "GitRepos", gitRepoStateChoices)
	list, info, err := listGitRepos(ctx, s)
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{info}
	h.setWatch(l, watchOf("gitrepos", info, ""))
	mayPatch := map[string]bool{}
	out := make([]gitRepoView, 0, len(list))
	for i := range list {
		gr := &list[i]
		gv := newGitRepoView(gr)
		if !f.match(gr.Namespace, gr.Name, gr.Labels, gitRepoStates(gv.State)) {
			continue
		}
		allowed, ok := mayPatch[gr.Namespace]
		if !ok {
			if allowed, err = canPatchIn(ctx, v, gr.Namespace, fleetv1alpha1.GroupVersion.Group, "gitrepos"); err != nil {
				return "", nil, err
			}
			mayPatch[gr.Namespace] = allowed
		}
		gv.CanPause = allowed
		out = append(out, gv)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i].Namespace, out[i].Name) < key(out[j].Namespace, out[j].Name) })
	return "gitrepos", out, nil
}

func newGitRepoView(gr *fleetv1alpha1.GitRepo) gitRepoView {
	v := gitRepoView{Namespace: gr.Namespace, Name: gr.Name, Repo: text.RedactRepo(gr.Spec.Repo), Wants: gr.Spec.Follows(), Paths: gr.Spec.Paths,
		Commit: gr.Status.Commit, Bundles: gr.Status.Bundles, BundlesReady: gr.Status.Summary.ReadyBundles,
		Paused: gr.Spec.Paused, ClientSecret: gr.Spec.ClientSecretName,
		Synced:      meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionSynced),
		Ready:       meta.FindStatusCondition(gr.Status.Conditions, fleetv1alpha1.ConditionReady),
		BundlesLink: "/bundles?namespace=" + url.QueryEscape(gr.Namespace)}
	v.Short = v.Commit
	if len(v.Short) > 12 {
		v.Short = v.Short[:12]
	}
	if len(v.Paths) == 0 {
		v.Paths = []string{"(repository root)"}
	}
	if gr.Spec.PollingInterval != nil {
		v.Polling = gr.Spec.PollingInterval.Duration.String()
	}
	action := "pause"
	if v.Paused {
		action = "resume"
	}
	v.PausePath = "/gitrepos/" + url.PathEscape(gr.Namespace) + "/" + url.PathEscape(gr.Name) + "/" + action
	// A condition describes the generation it was written for: an older one is pending.
	current := func(c *metav1.Condition) bool { return c != nil && c.ObservedGeneration == gr.Generation }
	switch {
	case v.Paused:
		v.State = gitStatePaused
	case current(v.Synced) && v.Synced.Status == metav1.ConditionFalse:
		v.State, v.Error = gitStateError, v.Synced.Reason
	case !current(v.Synced):
		v.State = gitStatePending
	case v.Ready != nil && v.Ready.Status == metav1.ConditionTrue:
		v.State = gitStateReady
	default:
		v.State = gitStateNotReady
	}
	return v
}
