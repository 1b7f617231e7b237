package dashboard

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	managementv1alpha1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted"
	"github.com/droverhq/drover/internal/hosted/aks"
	"github.com/droverhq/drover/internal/hosted/eks"
	"github.com/droverhq/drover/internal/hosted/gke"
	"github.com/droverhq/drover/internal/hosted/merge"
	"github.com/droverhq/drover/internal/kubeevents"
)

var providers = []hosted.Provider{eks.Provider{}, gke.Provider{}, aks.Provider{}}

// Marks of a field on the hosted cluster page.
const (
	markManaged   = "managed"
	markUnmanaged = "unmanaged"
	// markAdopted: the current value was changed at the provider (the console, Terraform) and
	// adopted into the config (an Adopted Event names the field and this value).
	markAdopted = "adopted"
	// markConflict: the field changed on both sides since the last sync (the Conflict condition
	// names it, with drover's and the provider's values); drover's value was applied.
	markConflict = "conflict"
	// markReverted: under syncPolicy enforce, a change at the provider was rolled back to this
	// value (a DriftReverted Event).
	markReverted = "drift-reverted"
	// markDrift: managed, and the provider holds another value (being pushed, or to be adopted).
	markDrift = "drift"
)

// fieldRow is one field of the effective state with its marks and its value on each side.
type fieldRow struct {
	Path      string
	Effective string
	// Config, Applied, Upstream are the values in spec (drover's config), in the applied base of
	// the last sync, and at the provider; "" with Has* false when absent there.
	Config, Applied, Upstream          string
	HasConfig, HasApplied, HasUpstream bool
	Managed                            bool
	Marks                              []string
	// Conflict holds both values of a conflict.
	ConflictDrover, ConflictProvider string
	// Note says where an adopted or reverted value came from and when.
	Note string
}

// Has reports whether the row carries mark m.
func (f fieldRow) Has(m string) bool {
	for _, x := range f.Marks {
		if x == m {
			return true
		}
	}
	return false
}

// timedFinding is a field finding from an Event, with when it happened.
type timedFinding struct {
	hosted.Finding
	at time.Time
}

// fieldRows flattens a hosted cluster into its effective state (hosted.View, as drover cluster
// get shows it) and marks each field from what status and Events record: managed or unmanaged,
// adopted from the console, conflict (both values), drift reverted, drift.
func fieldRows(p hosted.Provider, c *managementv1alpha1.Cluster, events []corev1.Event) ([]fieldRow, bool, error) {
	upstream, err := p.Upstream(c)
	if err != nil {
		return nil, false, fmt.Errorf("read the upstream state: %w", err)
	}
	config, err := p.Config(c)
	if err != nil {
		return nil, false, fmt.Errorf("read the config: %w", err)
	}
	applied, err := p.Applied(c)
	if err != nil {
		return nil, false, fmt.Errorf("read the applied config: %w", err)
	}
	view, err := hosted.View(p, c, upstream)
	if err != nil {
		return nil, false, fmt.Errorf("compute the effective state: %w", err)
	}
	prefix := p.Name() + "Config."
	schema := p.Schema()

	// The latest adoption and revert of each field, from the Events still kept.
	latest := map[string]timedFinding{}
	for i := range events {
		e := &events[i]
		f, ok := hosted.ParseFinding(e.Reason, e.Message)
		if !ok || f.Reason == hosted.EventConflict {
			continue
		}
		at := kubeevents.LastTime(e)
		k := f.Reason + "\x00" + f.Field
		if prev, ok := latest[k]; !ok || at.After(prev.at) {
			latest[k] = timedFinding{f, at}
		}
	}
	// Conflicts: the Conflict condition, True until the config changes again.
	conflicts := hosted.ViewConflicts(c, prefix, view)

	rows := make([]fieldRow, 0, len(view))
	for _, v := range view {
		path, err := merge.ParsePath(v.Path)
		if err != nil {
			return nil, false, fmt.Errorf("field %s: %w", v.Path, err)
		}
		row := fieldRow{Path: prefix + v.Path, Effective: v.Value, Managed: v.Managed}
		row.Config, row.HasConfig = value(schema, config, path)
		row.Applied, row.HasApplied = value(schema, applied, path)
		row.Upstream, row.HasUpstream = value(schema, upstream, path)
		if v.Managed {
			row.Marks = append(row.Marks, markManaged)
		} else {
			row.Marks = append(row.Marks, markUnmanaged)
		}
		for _, f := range conflicts {
			if hosted.CoversField(f.Field, row.Path) {
				row.Marks = append(row.Marks, markConflict)
				row.ConflictDrover, row.ConflictProvider = f.Config, f.Upstream
				break
			}
		}
		// An adoption or a revert marks the field while its config still holds that value.
		for _, reason := range []string{hosted.EventAdopted, hosted.EventDriftReverted} {
			for k, f := range latest {
				if !strings.HasPrefix(k, reason+"\x00") || !hosted.CoversField(f.Field, row.Path) {
					continue
				}
				fpath, err := merge.ParsePath(strings.TrimPrefix(f.Field, prefix))
				if err != nil {
					continue
				}
				cur, has := value(schema, config, fpath)
				if !has {
					cur = "(absent)"
				}
				switch {
				case reason == hosted.EventAdopted && cur == f.Upstream:
					row.Marks = append(row.Marks, markAdopted)
					row.Note = fmt.Sprintf("changed at the provider to %s and adopted into the config at %s", f.Upstream, f.at.UTC().Format(time.RFC3339))
				case reason == hosted.EventDriftReverted && cur == f.Config:
					row.Marks = append(row.Marks, markReverted)
					row.Note = fmt.Sprintf("changed at the provider to %s and reverted at %s", f.Upstream, f.at.UTC().Format(time.RFC3339))
				}
			}
		}
		if v.Drift {
			row.Marks = append(row.Marks, markDrift)
		}
		rows = append(rows, row)
	}
	return rows, upstream == nil, nil
}

// value is a field's value as messages show it (JSON).
func value(schema merge.Schema, tree map[string]any, path merge.Path) (string, bool) {
	if tree == nil {
		return "", false
	}
	v, ok := schema.Get(tree, path)
	if !ok || v == nil {
		return "", false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), true
	}
	return string(b), true
}
