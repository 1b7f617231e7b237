package merge

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

var schema = Schema{
	Maps:       []string{"tags", "nodeGroups.*.labels"},
	NamedLists: map[string]string{"nodeGroups": "name"},
	Sets:       []string{"loggingTypes"},
}

func tree(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return m
}

func paths(cs []Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Path.String())
	}
	sort.Strings(out)
	return out
}

func TestThreeWay(t *testing.T) {
	tests := []struct {
		name                      string
		policy                    Policy
		base, config, upstream    string
		push, adopt, conflict, rv []string
	}{
		{
			name:     "the seed's race: console enabled privateAccess, drover edited tags",
			base:     `{"privateAccess": false, "tags": {"team": "a"}}`,
			config:   `{"privateAccess": false, "tags": {"team": "b"}}`,
			upstream: `{"privateAccess": true, "tags": {"team": "a"}}`,
			push:     []string{"tags[team]"}, adopt: []string{"privateAccess"},
		},
		{
			name:     "same race under enforce reverts the console change",
			policy:   Enforce,
			base:     `{"privateAccess": false, "tags": {"team": "a"}}`,
			config:   `{"privateAccess": false, "tags": {"team": "b"}}`,
			upstream: `{"privateAccess": true, "tags": {"team": "a"}}`,
			push:     []string{"privateAccess", "tags[team]"}, rv: []string{"privateAccess"},
		},
		{
			name:     "changed on both sides: drover wins, conflict reported",
			base:     `{"kubernetesVersion": "1.31"}`,
			config:   `{"kubernetesVersion": "1.33"}`,
			upstream: `{"kubernetesVersion": "1.32"}`,
			push:     []string{"kubernetesVersion"}, conflict: []string{"kubernetesVersion"},
		},
		{
			name:     "same change on both sides is no conflict",
			base:     `{"kubernetesVersion": "1.31"}`,
			config:   `{"kubernetesVersion": "1.32"}`,
			upstream: `{"kubernetesVersion": "1.32"}`,
		},
		{
			name:     "nil fields are never touched",
			base:     `{}`,
			config:   `{"kubernetesVersion": null, "tags": null}`,
			upstream: `{"kubernetesVersion": "1.32", "tags": {"a": "b"}}`,
		},
		{
			name:     "newly managed field on an imported cluster is pushed",
			base:     `{}`,
			config:   `{"publicAccess": false}`,
			upstream: `{"publicAccess": true}`,
			push:     []string{"publicAccess"},
		},
		{
			name:     "newly managed map is the whole set",
			base:     `{"tags": null}`,
			config:   `{"tags": {"a": "1"}}`,
			upstream: `{"tags": {"a": "1", "b": "2"}}`,
			push:     []string{"tags[b]"},
		},
		{
			name:     "tag added on each side: both survive",
			base:     `{"tags": {"a": "1"}}`,
			config:   `{"tags": {"a": "1", "drover": "x"}}`,
			upstream: `{"tags": {"a": "1", "console": "y"}}`,
			push:     []string{"tags[drover]"}, adopt: []string{"tags[console]"},
		},
		{
			name:     "tag removed by drover is removed upstream",
			base:     `{"tags": {"a": "1", "b": "2"}}`,
			config:   `{"tags": {"a": "1"}}`,
			upstream: `{"tags": {"a": "1", "b": "2"}}`,
			push:     []string{"tags[b]"},
		},
		{
			name:     "node group deleted in the console is not re-created",
			base:     `{"nodeGroups": [{"name": "a", "desiredSize": 2}, {"name": "b", "desiredSize": 1}]}`,
			config:   `{"nodeGroups": [{"name": "a", "desiredSize": 2}, {"name": "b", "desiredSize": 1}]}`,
			upstream: `{"nodeGroups": [{"name": "a", "desiredSize": 2}]}`,
			adopt:    []string{"nodeGroups[b]"},
		},
		{
			name:     "node group added in the console is adopted",
			base:     `{"nodeGroups": [{"name": "a", "desiredSize": 2}]}`,
			config:   `{"nodeGroups": [{"name": "a", "desiredSize": 2}]}`,
			upstream: `{"nodeGroups": [{"name": "a", "desiredSize": 2}, {"name": "c", "desiredSize": 3}]}`,
			adopt:    []string{"nodeGroups[c]"},
		},
		{
			name:     "per-field merge inside a node group",
			base:     `{"nodeGroups": [{"name": "a", "desiredSize": 2, "labels": {"x": "1"}}]}`,
			config:   `{"nodeGroups": [{"name": "a", "desiredSize": 2, "labels": {"x": "2"}}]}`,
			upstream: `{"nodeGroups": [{"name": "a", "desiredSize": 5, "labels": {"x": "1"}}]}`,
			push:     []string{"nodeGroups[a].labels[x]"}, adopt: []string{"nodeGroups[a].desiredSize"},
		},
		{
			name:     "drover edited a group the console deleted: conflict, re-created",
			base:     `{"nodeGroups": [{"name": "a", "desiredSize": 2}]}`,
			config:   `{"nodeGroups": [{"name": "a", "desiredSize": 4}]}`,
			upstream: `{"nodeGroups": []}`,
			push:     []string{"nodeGroups[a]"}, conflict: []string{"nodeGroups[a]"},
		},
		{
			name:     "sets compare without order",
			base:     `{"loggingTypes": ["api", "audit"]}`,
			config:   `{"loggingTypes": ["api", "audit"]}`,
			upstream: `{"loggingTypes": ["audit", "api"]}`,
		},
		{
			name:     "nothing applied yet: every difference is pushed",
			config:   `{"kubernetesVersion": "1.33", "tags": {"a": "1"}}`,
			upstream: `{"kubernetesVersion": "1.32", "tags": {}}`,
			push:     []string{"kubernetesVersion", "tags[a]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ThreeWay(schema, tt.policy, tree(t, tt.base), tree(t, tt.config), tree(t, tt.upstream))
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"push", paths(r.Push), tt.push}, {"adopt", paths(r.Adopt), tt.adopt}, {"conflicts", paths(r.Conflicts), tt.conflict}, {"reverts", paths(r.Reverts), tt.rv}} {
				want := c.want
				if want == nil {
					want = []string{}
				}
				sort.Strings(want)
				if !reflect.DeepEqual(c.got, want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, want)
				}
			}
		})
	}
}

func TestSetAndGet(t *testing.T) {
	cfg := tree(t, `{"tags": {"a": "1"}, "nodeGroups": [{"name": "a", "desiredSize": 2}]}`)
	schema.Set(cfg, Path{{Field: "tags"}, {Key: "b"}}, "2", true)
	schema.Set(cfg, Path{{Field: "tags"}, {Key: "a"}}, nil, false)
	schema.Set(cfg, Path{{Field: "nodeGroups"}, {Key: "a"}, {Field: "desiredSize"}}, float64(3), true)
	schema.Set(cfg, Path{{Field: "nodeGroups"}, {Key: "c"}}, map[string]any{"name": "c"}, true)
	schema.Set(cfg, Path{{Field: "privateAccess"}}, true, true)
	want := tree(t, `{"tags": {"b": "2"}, "nodeGroups": [{"name": "a", "desiredSize": 3}, {"name": "c"}], "privateAccess": true}`)
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got %v\nwant %v", cfg, want)
	}
	if v, ok := schema.Get(cfg, Path{{Field: "nodeGroups"}, {Key: "a"}, {Field: "desiredSize"}}); !ok || v != float64(3) {
		t.Fatalf("Get desiredSize = %v %v", v, ok)
	}
	schema.Set(cfg, Path{{Field: "nodeGroups"}, {Key: "a"}}, nil, false)
	if _, ok := schema.Get(cfg, Path{{Field: "nodeGroups"}, {Key: "a"}}); ok {
		t.Fatal("node group a still present after removal")
	}
}

// TestRandomInterleavingsLoseNoUpdates plays seeded random sequences of console edits, drover
// edits and syncs against an in-memory "cloud" and checks, after every sync, the no-lost-update
// rules: a console change survives unless drover later changed the same field, and once synced
// no managed field differs from upstream.
func TestRandomInterleavingsLoseNoUpdates(t *testing.T) {
	fields := []string{"f1", "f2", "f3", "f4"}
	for seed := int64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		cloud := map[string]any{"f1": "0", "f2": "0", "f3": "0", "f4": "0"}
		config := map[string]any{"f1": "0", "f2": "0", "f3": "0", "f4": nil} // f4 unmanaged
		base := copyTree(config)
		// What each side wrote last since the previous sync. A field written by both is a conflict,
		// and drover's explicit edit wins.
		console, drover := map[string]string{}, map[string]string{}
		for step := 0; step < 200; step++ {
			f := fields[rng.Intn(len(fields))]
			val := string(rune('a' + rng.Intn(26)))
			switch rng.Intn(3) {
			case 0:
				cloud[f] = val
				console[f] = val
			case 1: // drover edit (f4 becomes managed when first edited)
				config[f] = val
				drover[f] = val
			default:
				// A write of the value the field already had at the last sync is no change.
				for f, v := range drover {
					if base[f] == v {
						delete(drover, f)
					}
				}
				for f, v := range console {
					if base[f] == v {
						delete(console, f)
					}
				}
				r := ThreeWay(Schema{}, Adopt, base, config, cloud)
				for _, c := range r.Adopt {
					config[c.Path.Top()] = c.Upstream
				}
				for _, c := range r.Push {
					cloud[c.Path.Top()] = c.Config
				}
				base = copyTree(config)
				for f, v := range drover {
					if cloud[f] != v || config[f] != v {
						t.Fatalf("seed %d step %d: drover's %s=%s lost: cloud %v config %v", seed, step, f, v, cloud[f], config[f])
					}
				}
				for f, v := range console {
					if _, both := drover[f]; !both && config[f] != nil && (config[f] != v || cloud[f] != v) {
						t.Fatalf("seed %d step %d: console's %s=%s lost: cloud %v config %v", seed, step, f, v, cloud[f], config[f])
					}
				}
				for _, f := range fields {
					if config[f] != nil && config[f] != cloud[f] {
						t.Fatalf("seed %d step %d: managed %s differs after sync: config %v cloud %v", seed, step, f, config[f], cloud[f])
					}
				}
				console, drover = map[string]string{}, map[string]string{}
			}
		}
	}
}

func copyTree(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestParsePathRoundTrips(t *testing.T) {
	for _, p := range []Path{
		{{Field: "kubernetesVersion"}},
		{{Field: "tags"}, {Key: "cost.center/x"}},
		{{Field: "nodeGroups"}, {Key: "ng-1"}, {Field: "labels"}, {Key: "kubernetes.io/role"}},
		{{Field: "nodePools"}, {Key: "p"}, {Field: "config"}, {Field: "machineType"}},
	} {
		got, err := ParsePath(p.String())
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("ParsePath(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := ParsePath("tags[unclosed"); err == nil {
		t.Error("want an error for an unclosed bracket")
	}
}
