package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
)

// The list pages' filter parameters (GET query): a text filter, a label selector and a state.
const (
	paramQ        = "q"
	paramSelector = "selector"
	paramState    = "state"
)

// filterParams are the filter's parameters, in the order the form shows them.
var filterParams = []string{paramQ, paramSelector, paramState}

// stateProblem is the state every page has: anything needing attention. Each page defines it
// with the states the overview counts as bad (see the *States functions).
const stateProblem = "problem"

// stateChoice is a state the filter offers: its value (state=) and its words.
type stateChoice struct{ Value, Label string }

// listFilter is a list page's filter (the query parameters q, selector and state) and what it
// selected. It is applied to what the viewer could list with their own identity, after the
// list: it narrows what the page shows, never widens it.
type listFilter struct {
	// Q is a case-insensitive substring of an object's namespace/name or of one of its labels
	// as key=value.
	Q string
	// Selector is a Kubernetes label selector (labels.Parse).
	Selector string
	// State is one of States' values.
	State  string
	States []stateChoice
	// ErrParam and Err: the parameter that is invalid and why (the parser's message). The page
	// then shows the error and no rows, never the unfiltered list as if filtered.
	ErrParam, Err string
	// Shown and Total: objects shown of those listed; What names them ("fleet clusters").
	Shown, Total int
	What         string
	// Reset is the page without the filter (the namespace selection kept).
	Reset string

	sel labels.Selector
}

// newFilter reads a list page's filter from the request.
func newFilter(r *http.Request, l *layoutData, what string, states []stateChoice) *listFilter {
	q := r.URL.Query()
	f := &listFilter{Q: strings.TrimSpace(q.Get(paramQ)), Selector: strings.TrimSpace(q.Get(paramSelector)), State: strings.TrimSpace(q.Get(paramState)),
		States: states, What: what, Reset: l.Path + nsQuery(l.Namespace)}
	if f.Selector != "" {
		sel, err := labels.Parse(f.Selector)
		if err != nil {
			f.ErrParam, f.Err = paramSelector, err.Error()
		}
		f.sel = sel
	}
	if f.Err == "" && f.State != "" && !slices.ContainsFunc(states, func(c stateChoice) bool { return c.Value == f.State }) {
		values := make([]string, 0, len(states))
		for _, c := range states {
			values = append(values, c.Value)
		}
		f.ErrParam, f.Err = paramState, fmt.Sprintf("unknown state %q: use one of %s", f.State, strings.Join(values, ", "))
	}
	l.Filter = f
	return f
}

// Active reports whether the filter narrows the page.
func (f *listFilter) Active() bool {
	return f != nil && (f.Q != "" || f.Selector != "" || f.State != "")
}

// Invalid reports whether a parameter is invalid: the page shows no rows.
func (f *listFilter) Invalid() bool { return f != nil && f.Err != "" }

// match reports whether an object (namespace, name, labels) in the given states passes the
// filter, and counts it. An invalid filter matches nothing.
func (f *listFilter) match(ns, name string, lbls map[string]string, states []string) bool {
	f.Total++
	if !f.matches(ns, name, lbls, states) {
		return false
	}
	f.Shown++
	return true
}

func (f *listFilter) matches(ns, name string, lbls map[string]string, states []string) bool {
	switch {
	case f.Err != "":
		return false
	case f.State != "" && !slices.Contains(states, f.State):
		return false
	case f.sel != nil && !f.sel.Matches(labels.Set(lbls)):
		return false
	case f.Q == "":
		return true
	}
	q := strings.ToLower(f.Q)
	if strings.Contains(strings.ToLower(ns+"/"+name), q) {
		return true
	}
	for k, v := range lbls {
		if strings.Contains(strings.ToLower(k+"="+v), q) {
			return true
		}
	}
	return false
}

// query is the filter's parameters, to keep on a link or form action.
func (f *listFilter) query(v url.Values) {
	if f == nil {
		return
	}
	for _, p := range []struct{ k, v string }{{paramQ, f.Q}, {paramSelector, f.Selector}, {paramState, f.State}} {
		if p.v != "" {
			v.Set(p.k, p.v)
		}
	}
}

// pageQuery is the query of a list page as shown: its namespace selection and filter, for the
// actions that return to it ("" or "?...").
func pageQuery(ns string, f *listFilter) string {
	v := url.Values{}
	if ns != "" {
		v.Set("namespace", ns)
	}
	f.query(v)
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// backQuery is the query an action returns to: the request's valid namespace selection and its
// filter parameters (query-escaped; the page checks them again).
func backQuery(r *http.Request) string {
	v := url.Values{}
	if ns := selected(r); ns != "" {
		v.Set("namespace", ns)
	}
	for _, p := range filterParams {
		if s := r.URL.Query().Get(p); s != "" {
			v.Set(p, s)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// filterLink is a list page filtered by state, keeping the namespace selection: where an
// overview count leads.
func filterLink(path, ns, state string) string {
	v := url.Values{paramState: {state}}
	if ns != "" {
		v.Set("namespace", ns)
	}
	return path + "?" + v.Encode()
}

// --- each page's states: the overview counts and the filters both use these ---

// fleetStateChoices are the fleet page's states: connState's, and problem (not connected).
var fleetStateChoices = []stateChoice{{stateProblem, "problem (not connected)"}, {stateConnected, "connected"}, {stateDisconnected, "disconnected"},
	{stateUnreachable, connLabel(stateUnreachable)}, {stateNotReady, connLabel(stateNotReady)}, {stateWaiting, "never checked in"}}

// fleetStates are a fleet cluster's states for the filter: its connState, and problem when it
// is not connected.
func fleetStates(state string) []string {
	if state == stateConnected {
		return []string{state}
	}
	return []string{state, stateProblem}
}

// The hosted clusters' states besides their phases.
const (
	hostedStateConflict  = "conflict"
	hostedStateNotReady  = "notready"
	hostedStateNotJoined = "notjoined"
)

// hostedStateChoices: problem, the overview's counts (conflict, not ready, cannot join) and
// its phase columns.
var hostedStateChoices = func() []stateChoice {
	out := []stateChoice{{stateProblem, "problem (failed, not ready, conflict, cannot join)"}, {hostedStateNotReady, "not ready"},
		{hostedStateConflict, "conflict"}, {hostedStateNotJoined, "cannot join the fleet"}}
	for _, p := range phaseOrder {
		out = append(out, stateChoice{p, "phase " + p})
	}
	return out
}()

// hostedPhase is a hosted cluster's phase as the overview's columns name it ("pending" before
// it is read).
func hostedPhase(c *managementv1alpha1.Cluster) string {
	if p := string(c.Status.Phase); p != "" {
		return p
	}
	return "pending"
}

// hostedStates are a hosted cluster's states: its phase; conflict (Conflict=True); notready
// (Ready=False: SecretNotFound, CredentialsRejected, ...); notjoined (its join failed,
// fleetPlace's "bad"); and problem when it failed or is any of those.
func hostedStates(c *managementv1alpha1.Cluster) []string {
	phase := hostedPhase(c)
	out := []string{phase}
	if condTrue(c.Status.Conditions, hosted.CondConflict) {
		out = append(out, hostedStateConflict)
	}
	if hostedNotReady(c) != nil {
		out = append(out, hostedStateNotReady)
	}
	if _, _, place := fleetPlace(c); place == "bad" {
		out = append(out, hostedStateNotJoined)
	}
	if len(out) > 1 || phase == string(managementv1alpha1.PhaseFailed) {
		out = append(out, stateProblem)
	}
	return out
}

// The Bundles' states: Ready=True or not.
const (
	bundleReady    = "ready"
	bundleNotReady = "notready"
)

var bundleStateChoices = []stateChoice{{stateProblem, "problem (not ready)"}, {bundleReady, "ready"}, {bundleNotReady, "not ready"}}

// bundleStates: ready (Ready=True) or notready and problem.
func bundleStates(b *fleetv1alpha1.Bundle) []string {
	if condTrue(b.Status.Conditions, fleetv1alpha1.ConditionReady) {
		return []string{bundleReady}
	}
	return []string{bundleNotReady, stateProblem}
}

var gitRepoStateChoices = []stateChoice{{stateProblem, "problem (not syncing, not ready)"}, {gitStateError, "not syncing"}, {gitStateNotReady, "not ready"},
	{gitStateReady, "ready"}, {gitStatePaused, "paused"}, {gitStatePending, "syncing"}}

// gitRepoStates: the GitRepo's state (newGitRepoView), and problem when it is not syncing
// (its last fetch or render failed) or not ready. Paused and pending are no problem.
func gitRepoStates(state string) []string {
	if state == gitStateError || state == gitStateNotReady {
		return []string{state, stateProblem}
	}
	return []string{state}
}
