package deployer

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name          string
		desired, live map[string]any
		want          []string
	}{
		{"equal", map[string]any{"data": map[string]any{"a": "1"}}, map[string]any{"data": map[string]any{"a": "1"}}, nil},
		{"changed value", map[string]any{"data": map[string]any{"a": "1"}}, map[string]any{"data": map[string]any{"a": "2"}}, []string{`data.a: want "1", have "2"`}},
		{"added field", map[string]any{"data": map[string]any{}}, map[string]any{"data": map[string]any{"b": "x"}}, []string{`data.b: want <none>, have "x"`}},
		{"removed field", map[string]any{"spec": map[string]any{"replicas": int64(1)}}, map[string]any{"spec": map[string]any{}}, []string{`spec.replicas: want 1, have <none>`}},
		{"list element", map[string]any{"l": []any{"a", "b"}}, map[string]any{"l": []any{"a", "c"}}, []string{`l[1]: want "b", have "c"`}},
		{"list length", map[string]any{"l": []any{"a"}}, map[string]any{"l": []any{"a", "c"}}, []string{`l: want ["a"], have ["a","c"]`}},
		{"bookkeeping ignored", map[string]any{"metadata": map[string]any{"resourceVersion": "2", "generation": int64(3), "managedFields": []any{}}, "status": map[string]any{"x": 1}},
			map[string]any{"metadata": map[string]any{"resourceVersion": "1", "generation": int64(2)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(tc.desired, tc.live); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %q, want %q", got, tc.want)
			}
		})
	}
}
