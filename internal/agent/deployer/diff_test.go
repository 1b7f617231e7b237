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

// TestDiffRedacts: drift reports reach anyone who can read Bundles, so they name the fields of
// Secrets and sensitive fields but never show their values.
func TestDiffRedacts(t *testing.T) {
	secret := func(data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": data}
	}
	env := func(name, value string) map[string]any {
		return map[string]any{"kind": "Deployment", "spec": map[string]any{"env": []any{map[string]any{"name": name, "value": value}}}}
	}
	for _, tc := range []struct {
		name          string
		desired, live map[string]any
		want          []string
	}{
		{"secret data: path only", secret(map[string]any{"password": "czNjcmV0"}), secret(map[string]any{"password": "bGVha2Vk"}), []string{"data.password"}},
		{"secret: every field hidden", secret(map[string]any{"plain": "YQ=="}), secret(map[string]any{"plain": "Yg==", "extra": "Yw=="}), []string{"data.extra", "data.plain"}},
		{"secret annotations hidden", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"annotations": map[string]any{"a": "1"}}},
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"annotations": map[string]any{"a": "2"}}}, []string{"metadata.annotations.a"}},
		{"sensitive key in a configmap", map[string]any{"kind": "ConfigMap", "data": map[string]any{"db-Password": "a", "color": "blue"}},
			map[string]any{"kind": "ConfigMap", "data": map[string]any{"db-Password": "b", "color": "red"}},
			[]string{`data.color: want "blue", have "red"`, "data.db-Password: (redacted)"}},
		{"below a sensitive field", map[string]any{"spec": map[string]any{"auth": map[string]any{"user": "a"}}}, map[string]any{"spec": map[string]any{"auth": map[string]any{"user": "b"}}},
			[]string{"spec.auth.user: (redacted)"}},
		{"env entry named sensitive", env("API_TOKEN", "t1"), env("API_TOKEN", "t2"), []string{"spec.env[0].value: (redacted)"}},
		{"env entry not sensitive", env("LOG_LEVEL", "info"), env("LOG_LEVEL", "debug"), []string{`spec.env[0].value: want "info", have "debug"`}},
		{"list holding a sensitive entry", env("API_TOKEN", "t1"), map[string]any{"kind": "Deployment", "spec": map[string]any{"env": []any{}}}, []string{"spec.env: (redacted)"}},
		{"map holding a sensitive key", map[string]any{"spec": map[string]any{"x": map[string]any{"token": "t"}}}, map[string]any{"spec": map[string]any{"x": "flat"}}, []string{"spec.x: (redacted)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(tc.desired, tc.live)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %q, want %q", got, tc.want)
			}
		})
	}
}
