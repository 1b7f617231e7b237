package hosted

import (
	"reflect"
	"strings"
	"testing"
)

// TestFindingsRoundTrip: the notes and the Conflict message the reconciler writes are read back
// field by field, also with values that hold the separators.
func TestFindingsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reason string
		note   string
		want   Finding
	}{
		{"adopted", EventAdopted, AdoptedNote("eksConfig.loggingTypes", `["api","audit"]`),
			Finding{Reason: EventAdopted, Field: "eksConfig.loggingTypes", Upstream: `["api","audit"]`}},
		{"adopted absent", EventAdopted, AdoptedNote("eksConfig.tags[env]", "(absent)"),
			Finding{Reason: EventAdopted, Field: "eksConfig.tags[env]", Upstream: "(absent)"}},
		{"reverted with separator in value", EventDriftReverted, RevertedNote("aksConfig.tags[x]", `"a; reverted to b"`, `"c"`),
			Finding{Reason: EventDriftReverted, Field: "aksConfig.tags[x]", Upstream: `"a; reverted to b"`, Config: `"c"`}},
		{"conflict", EventConflict, ConflictNote("eksConfig.tags[team]", `"drover"`, `"console"`),
			Finding{Reason: EventConflict, Field: "eksConfig.tags[team]", Config: `"drover"`, Upstream: `"console"`}},
		{"conflict with parentheses", EventConflict, ConflictNote("gkeConfig.labels[a]", `"x) and (y"`, `"z"`),
			Finding{Reason: EventConflict, Field: "gkeConfig.labels[a]", Config: `"x) and (y"`, Upstream: `"z"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseFinding(tc.reason, tc.note)
			if !ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseFinding(%q) = %+v, %v; want %+v", tc.note, got, ok, tc.want)
			}
		})
	}
	for _, bad := range []struct{ reason, note string }{
		{EventAdopted, "something else"}, {EventConflict, "Creating the cluster"}, {"Creating", AdoptedNote("a", "b")},
	} {
		if f, ok := ParseFinding(bad.reason, bad.note); ok {
			t.Errorf("ParseFinding(%q, %q) = %+v, want no finding", bad.reason, bad.note, f)
		}
	}
}

func TestConflictFindings(t *testing.T) {
	t.Parallel()
	msg := ConflictMessagePrefix + strings.Join([]string{
		conflictEntry("eksConfig.tags[team]", `"a; eksConfig.x: drover 1"`, `"b"`),
		conflictEntry("eksConfig.nodeGroups[ng-1].desiredSize", "3", "5"),
	}, "; ")
	got := ConflictFindings(msg, []string{"eksConfig.nodeGroups[ng-1].desiredSize", "eksConfig.tags[team]", "eksConfig.tags", "eksConfig.x"})
	want := []Finding{
		{Reason: EventConflict, Field: "eksConfig.tags[team]", Config: `"a; eksConfig.x: drover 1"`, Upstream: `"b"`},
		{Reason: EventConflict, Field: "eksConfig.nodeGroups[ng-1].desiredSize", Config: "3", Upstream: "5"},
	}
	// "; eksConfig.x: drover " inside tags[team]'s value looks like an entry start; the entry
	// before it does not parse without what follows, so it keeps its full value.
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ConflictFindings = %+v\nwant %+v", got, want)
	}
	if got := ConflictFindings("No field was changed on both sides since the last sync.", []string{"eksConfig.tags[team]"}); got != nil {
		t.Fatalf("findings in a False condition's message: %+v", got)
	}
}
