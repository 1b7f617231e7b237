package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// tokenView is one ClusterRegistrationToken on the Tokens page. It never holds the token: the
// dashboard does not read Secrets, it shows the values Secret's name only.
type tokenView struct {
	Namespace, Name string
	// Ready is the Ready condition's status ("" before the token controller issued it);
	// ReadyMessage its message.
	Ready, ReadyMessage string
	// Expires is "in 1h30m", "expired" or "-" (no TTL); ExpiresAt the time.
	Expires, ExpiresAt string
	Expired            bool
	// Clusters is how many clusters registered with it of how many it may register ("1/3"),
	// "any" without spec.maxClusters, or "cluster NAME only" for an import token.
	Clusters string
	// Full: maxClusters reached; Open: a live token that registers any number of clusters.
	Full, Open bool
	Secret     string
	// ForCluster is the fleet Cluster a manager-initiated import token was made for ("": a
	// token someone created).
	ForCluster string
}

func listTokens(ctx context.Context, s *scope) ([]fleetv1alpha1.ClusterRegistrationToken, listInfo, error) {
	return listScoped[fleetv1alpha1.ClusterRegistrationToken](ctx, s, "tokens", "registration tokens", "")
}

type tokensData struct {
	Tokens []tokenView
	// Imports counts the tokens drover made for manager-initiated imports (one per cluster it
	// deploys an agent to), listed after the others.
	Imports int
}

func (h *Handler) tokens(ctx context.Context, _ *http.Request, _ *viewer, s *scope, l *layoutData) (string, any, error) {
	l.Title, l.Nav = "Registration tokens", "tokens"
	list, info, err := listTokens(ctx, s)
	if err != nil {
		return "", nil, err
	}
	l.Lists = []listInfo{info}
	h.setWatch(l, watchOf("tokens", info, ""))
	d := &tokensData{}
	now := h.opts.Now()
	for i := range list {
		tv := newTokenView(&list[i], now)
		if tv.ForCluster != "" {
			d.Imports++
		}
		d.Tokens = append(d.Tokens, tv)
	}
	sort.Slice(d.Tokens, func(i, j int) bool {
		a, b := d.Tokens[i], d.Tokens[j]
		if (a.ForCluster == "") != (b.ForCluster == "") {
			return a.ForCluster == ""
		}
		return key(a.Namespace, a.Name) < key(b.Namespace, b.Name)
	})
	return "tokens", d, nil
}

func newTokenView(t *fleetv1alpha1.ClusterRegistrationToken, now time.Time) tokenView {
	v := tokenView{Namespace: t.Namespace, Name: t.Name, Secret: orDash(t.Status.SecretName), Expires: "-", Clusters: "any"}
	if name, ok := boundCluster(t); ok {
		v.ForCluster = name
	}
	if c := meta.FindStatusCondition(t.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil {
		v.Ready, v.ReadyMessage = string(c.Status), c.Message
	}
	if e := t.Status.Expires; e != nil {
		v.ExpiresAt = e.UTC().Format(time.RFC3339)
		if left := e.Sub(now); left > 0 {
			v.Expires = "in " + humanAge(left)
		} else {
			v.Expires, v.Expired = "expired", true
		}
	}
	n := len(t.Status.RegisteredClientIDs)
	if v.ForCluster != "" {
		v.Clusters = "cluster " + v.ForCluster + " only"
		return v
	}
	if m := t.Spec.MaxClusters; m != nil {
		v.Clusters = fmt.Sprintf("%d/%d", n, *m)
		v.Full = n >= int(*m)
	} else {
		v.Open = !v.Expired
	}
	return v
}

// boundCluster says whether a token is bound to one fleet Cluster (the import token drover
// makes for a manager-initiated registration: the registration controller admits only that
// Cluster's UID) and names it.
func boundCluster(t *fleetv1alpha1.ClusterRegistrationToken) (string, bool) {
	name, _, bound := t.BoundCluster()
	if bound && name == "" {
		name = "(unnamed)"
	}
	return name, bound
}
