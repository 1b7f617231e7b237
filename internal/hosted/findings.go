package hosted

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/droverhq/drover/api/management/v1alpha1"
	"github.com/droverhq/drover/internal/hosted/merge"
)

// Reasons of the Events the reconciler records for a field found changed at the provider.
const (
	// EventAdopted (Normal): a managed field changed at the provider was adopted into the config.
	EventAdopted = "Adopted"
	// EventDriftReverted (Normal): under syncPolicy enforce, a managed field changed at the
	// provider was set back to the config's value.
	EventDriftReverted = "DriftReverted"
	// EventConflict (Warning): a field changed both in drover and at the provider since the last
	// sync; drover's value was applied.
	EventConflict = "Conflict"
	// EventProviderDefault (Normal): on the first pass after drover created the cluster, a field
	// the config left to the provider (GKE's zones of a regional cluster) was recorded in the
	// config with the provider's choice. Not a change at the provider: not counted as an adoption.
	EventProviderDefault = "ProviderDefault"
)

// The notes of those Events and the Conflict condition's message are built here and parsed back
// by Finding and ConflictFindings (the dashboard marks each field with them), so the two cannot
// drift apart. Field is the provider-prefixed path, e.g. eksConfig.tags[env]; values are as
// shown in messages (JSON, or "(absent)").
const (
	changedAt        = " changed at the provider to "
	adoptedSuffix    = "; adopted into the config"
	revertedTo       = "; reverted to "
	revertedSuffix   = " (syncPolicy enforce)"
	conflictBoth     = " was changed both in drover ("
	conflictProvider = ") and at the provider ("
	conflictSuffix   = ") since the last sync; drover's value wins"
	// ConflictMessagePrefix starts the Conflict condition's message when it is True.
	ConflictMessagePrefix = "Changed in drover and at the provider since the last sync; drover's value was applied: "
	entryDrover           = ": drover "
	entryProvider         = ", provider "
)

// AdoptedNote is the note of an Adopted Event.
func AdoptedNote(field, upstream string) string {
	return field + changedAt + upstream + adoptedSuffix
}

// ProviderDefaultNote is the note of a ProviderDefault Event.
func ProviderDefaultNote(field, upstream string) string {
	return field + " chosen by the provider at creation: " + upstream + "; recorded in the config"
}

// RevertedNote is the note of a DriftReverted Event.
func RevertedNote(field, upstream, config string) string {
	return field + changedAt + upstream + revertedTo + config + revertedSuffix
}

// ConflictNote is the note of a Conflict Event.
func ConflictNote(field, config, upstream string) string {
	return field + conflictBoth + config + conflictProvider + upstream + conflictSuffix
}

// conflictEntry is one field of the Conflict condition's message.
func conflictEntry(field, config, upstream string) string {
	return field + entryDrover + config + entryProvider + upstream
}

// Finding is a field named by an Adopted, DriftReverted or Conflict Event, or by the Conflict
// condition.
type Finding struct {
	// Reason is EventAdopted, EventDriftReverted or EventConflict.
	Reason string
	// Field is the provider-prefixed path (eksConfig.tags[env]).
	Field string
	// Config is drover's value (reverted to, or drover's side of a conflict); Upstream the
	// provider's value (adopted, reverted from, or the provider's side of a conflict).
	Config, Upstream string
}

// ParseFinding reads back the note of an Adopted, DriftReverted or Conflict Event.
func ParseFinding(reason, note string) (Finding, bool) {
	switch reason {
	case EventAdopted:
		field, rest, ok := strings.Cut(note, changedAt)
		if !ok || !strings.HasSuffix(rest, adoptedSuffix) {
			return Finding{}, false
		}
		return Finding{Reason: reason, Field: field, Upstream: strings.TrimSuffix(rest, adoptedSuffix)}, true
	case EventDriftReverted:
		field, rest, ok := strings.Cut(note, changedAt)
		if !ok || !strings.HasSuffix(rest, revertedSuffix) {
			return Finding{}, false
		}
		rest = strings.TrimSuffix(rest, revertedSuffix)
		i := strings.LastIndex(rest, revertedTo)
		if i < 0 {
			return Finding{}, false
		}
		return Finding{Reason: reason, Field: field, Upstream: rest[:i], Config: rest[i+len(revertedTo):]}, true
	case EventConflict:
		field, rest, ok := strings.Cut(note, conflictBoth)
		if !ok || !strings.HasSuffix(rest, conflictSuffix) {
			return Finding{}, false
		}
		rest = strings.TrimSuffix(rest, conflictSuffix)
		i := strings.LastIndex(rest, conflictProvider)
		if i < 0 {
			return Finding{}, false
		}
		return Finding{Reason: reason, Field: field, Config: rest[:i], Upstream: rest[i+len(conflictProvider):]}, true
	}
	return Finding{}, false
}

// ConflictFindings reads the fields of a True Conflict condition's message. fields are the
// provider-prefixed paths that may appear in it (the cluster's fields, from View); an entry is
// recognised by its field, so values holding "; " do not split it.
func ConflictFindings(msg string, fields []string) []Finding {
	body, ok := strings.CutPrefix(msg, ConflictMessagePrefix)
	if !ok {
		return nil
	}
	type start struct {
		at    int
		field string
	}
	var starts []start
	for _, f := range fields {
		marker := f + entryDrover
		for from := 0; from < len(body); {
			i := strings.Index(body[from:], marker)
			if i < 0 {
				break
			}
			at := from + i
			if at == 0 || strings.HasSuffix(body[:at], "; ") {
				starts = append(starts, start{at, f})
			}
			from = at + len(marker)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].at < starts[j].at })
	// An entry runs to the next start after which its own value parses (a value holding
	// "; field: drover " would otherwise cut it short).
	var out []Finding
	for i := 0; i < len(starts); {
		s := starts[i]
		from := s.at + len(s.field) + len(entryDrover)
		next := i + 1
		entry := ""
		for j := i + 1; j <= len(starts); j++ {
			end := len(body)
			if j < len(starts) {
				end = starts[j].at - len("; ")
			}
			if end >= from && strings.Contains(body[from:end], entryProvider) {
				entry, next = body[from:end], j
				break
			}
		}
		i = next
		k := strings.LastIndex(entry, entryProvider)
		if k < 0 {
			continue
		}
		out = append(out, Finding{Reason: EventConflict, Field: s.field, Config: entry[:k], Upstream: entry[k+len(entryProvider):]})
	}
	return out
}

// ViewConflicts reads c's True Conflict condition against the fields of its view (View, with
// provider prefix prefix, e.g. "eksConfig."): the findings, each naming a field or a collection
// holding some of the rows (CoversField tells which). None when Conflict is not True.
func ViewConflicts(c *v1.Cluster, prefix string, view []FieldView) []Finding {
	cond := meta.FindStatusCondition(c.Status.Conditions, CondConflict)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return nil
	}
	var candidates []string
	seen := map[string]bool{}
	for _, r := range view {
		path, err := merge.ParsePath(r.Path)
		if err != nil {
			continue
		}
		for i := len(path); i > 0; i-- {
			f := prefix + path[:i].String()
			if !seen[f] {
				seen[f] = true
				candidates = append(candidates, f)
			}
		}
	}
	return ConflictFindings(cond.Message, candidates)
}

// CoversField reports whether a finding's field is the row's field or a collection holding it.
func CoversField(field, row string) bool {
	return row == field || strings.HasPrefix(row, field+".") || strings.HasPrefix(row, field+"[")
}
