package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxFallbackNamespaces bounds the namespaces listed one by one when a viewer may not list a
// kind cluster-wide (and chose no namespace).
const maxFallbackNamespaces = 100

// scope is where a page lists. The rule (docs/dashboard.md):
//   - ?namespace=NS: that namespace only;
//   - otherwise all namespaces; if that list is forbidden, the viewer's home namespaces (the
//     one given at login, drover dashboard's context namespace) and, if the viewer may list
//     namespaces, every namespace (up to maxFallbackNamespaces), each listed on its own, the
//     forbidden ones skipped. The page says which namespaces it shows and offers the selector.
type scope struct {
	namespace string
	viewer    *viewer
	cache     *viewCache
	// fixed, when set, gives the fallback namespaces instead of the viewer's.
	fixed func() []string

	once       sync.Once
	namespaces []string
	nsErr      error
}

func (h *Handler) newScope(r *http.Request, v *viewer) (*scope, error) {
	ns := r.URL.Query().Get("namespace")
	if ns != "" && !validNamespace(ns) {
		return nil, fmt.Errorf("%q is not a namespace name", ns)
	}
	return &scope{namespace: ns, viewer: v, cache: h.cache}, nil
}

func validNamespace(ns string) bool { return len(validation.IsDNS1123Label(ns)) == 0 }

// fallback lists the namespaces to try one by one.
func (s *scope) fallback(ctx context.Context) ([]string, error) {
	s.once.Do(func() {
		if s.fixed != nil {
			s.namespaces = dedupe(s.fixed())
			if len(s.namespaces) > maxFallbackNamespaces {
				s.namespaces = s.namespaces[:maxFallbackNamespaces]
			}
			return
		}
		out := append([]string(nil), s.viewer.home...)
		list := &corev1.NamespaceList{}
		err := s.viewer.client.List(ctx, list)
		switch {
		case err == nil:
			for _, n := range list.Items {
				out = append(out, n.Name)
			}
		case apierrors.IsForbidden(err):
		default:
			s.nsErr = fmt.Errorf("list namespaces: %w", err)
		}
		out = dedupe(out)
		if len(out) > maxFallbackNamespaces {
			out = out[:maxFallbackNamespaces]
		}
		s.namespaces = out
	})
	return s.namespaces, s.nsErr
}

// listInfo says where a kind was listed, for the page's notice and its watch.
type listInfo struct {
	What string
	// Chosen: the viewer chose the namespace (?namespace=).
	Chosen bool
	// All: listed in all namespaces.
	All bool
	// Namespaces listed in (when not All).
	Namespaces []string
	// Denied are the namespaces the viewer may not list the kind in ("" = all namespaces).
	Denied []string
	// Stale, when set, is since when some of the lists may be out of date: served from the
	// viewer's cache while the API server does not answer its watch.
	Stale time.Time
	// RVs are the resourceVersions the lists were read at (one per namespace listed, or one for
	// all): the page's event stream reports any change since, so none is missed.
	RVs []string
}

// Restricted: the page does not show what the viewer asked for (every namespace's objects,
// or the chosen namespace's), so it says so.
func (l listInfo) Restricted() bool {
	if l.Chosen {
		return len(l.Denied) > 0
	}
	return !l.All
}

// errUnauthorized: the API server no longer accepts the viewer's credential.
var errUnauthorized = errors.New("credential not accepted")

// listScoped lists a kind (a watchKinds name) within the scope, from the viewer's cache.
// Forbidden lists are recorded in the info, not returned as errors.
func listScoped[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, s *scope, kind, what, field string) ([]T, listInfo, error) {
	info := listInfo{What: what}
	// one lists a namespace; stale is since when its list may be out of date.
	one := func(ns string) (items []T, rv string, stale time.Time, err error) {
		e, err := s.cache.get(ctx, s.viewer, kind, ns, field)
		if err != nil {
			return nil, "", stale, err
		}
		if e.forbidden {
			return nil, "", stale, errForbidden
		}
		objs, rv := e.snapshot()
		out := make([]T, 0, len(objs))
		for _, o := range objs {
			if t, ok := o.(PT); ok {
				out = append(out, *t)
			}
		}
		return out, rv, e.stale(), nil
	}
	classify := func(err error) error {
		if apierrors.IsUnauthorized(err) {
			return errUnauthorized
		}
		return fmt.Errorf("list %s: %w", what, err)
	}
	if s.namespace != "" {
		info.Chosen = true
		out, rv, stale, err := one(s.namespace)
		if errors.Is(err, errForbidden) {
			info.Denied = []string{s.namespace}
			return nil, info, nil
		}
		if err != nil {
			return nil, info, classify(err)
		}
		info.Namespaces, info.RVs = []string{s.namespace}, []string{rv}
		staleSince(&info, stale)
		return out, info, nil
	}
	out, rv, stale, err := one("")
	if err == nil {
		info.All, info.RVs = true, []string{rv}
		staleSince(&info, stale)
		return out, info, nil
	}
	if !errors.Is(err, errForbidden) {
		return nil, info, classify(err)
	}
	info.Denied = []string{""}
	namespaces, err := s.fallback(ctx)
	if err != nil {
		return nil, info, classify(err)
	}
	type result struct {
		items []T
		rv    string
		stale time.Time
		err   error
	}
	results := make([]result, len(namespaces))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, ns := range namespaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			items, rv, stale, err := one(ns)
			results[i] = result{items, rv, stale, err}
		}()
	}
	wg.Wait()
	out = nil
	for i, res := range results {
		switch {
		case errors.Is(res.err, errForbidden):
			info.Denied = append(info.Denied, namespaces[i])
		case res.err != nil:
			return nil, info, classify(res.err)
		default:
			info.Namespaces = append(info.Namespaces, namespaces[i])
			info.RVs = append(info.RVs, res.rv)
			staleSince(&info, res.stale)
			out = append(out, res.items...)
		}
	}
	return out, info, nil
}

// staleSince keeps in info the earliest time its lists were last known current.
func staleSince(info *listInfo, since time.Time) {
	if !since.IsZero() && (info.Stale.IsZero() || since.Before(info.Stale)) {
		info.Stale = since
	}
}

// errForbidden: the viewer may not list the kind there.
var errForbidden = errors.New("forbidden")

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
