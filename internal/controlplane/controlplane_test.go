package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The versions the code checks must be the versions hack/kube-bins builds.
func TestPinnedVersionsMatchToolsModule(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "hack", "kube-bins", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ re, want string }{
		{`(?m)^\s*k8s.io/kubernetes (v\S+)`, KubernetesVersion},
		{`(?m)^\s*go.etcd.io/etcd/server/v3 v(\S+)`, EtcdVersion},
	} {
		m := regexp.MustCompile(tc.re).FindSubmatch(data)
		if m == nil || string(m[1]) != tc.want {
			t.Errorf("hack/kube-bins/go.mod pins %q (by %s), code expects %q", m, tc.re, tc.want)
		}
	}
}

func TestCheckBinaries(t *testing.T) {
	dir := t.TempDir()
	write := func(name, script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("etcd", "#!/bin/sh\necho 'etcd Version: "+EtcdVersion+"'\n")
	write("kube-apiserver", "#!/bin/sh\necho 'Kubernetes v1.29.0'\n")
	if err := os.WriteFile(filepath.Join(dir, "kwok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		bins []string
		want string // substring of the error; empty means success
	}{
		{"right version", []string{"etcd"}, ""},
		{"wrong version", []string{"kube-apiserver"}, `"Kubernetes v1.29.0", drover needs "Kubernetes ` + KubernetesVersion},
		{"missing", []string{"kube-scheduler"}, "kube-scheduler not found"},
		{"not executable", []string{"kwok"}, "not an executable file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBinaries(context.Background(), dir, tt.bins...)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "make tools") {
				t.Fatalf("got %v, want an error containing %q and the fix", err, tt.want)
			}
		})
	}
}

func TestPKIIsReusedAcrossRestarts(t *testing.T) {
	p := pki{dir: t.TempDir()}
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(p.path("admin.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p.path("admin.crt"))
	if string(before) != string(after) {
		t.Fatal("admin certificate regenerated on the second start; kubeconfigs handed out would break")
	}
	st, err := os.Stat(p.path("ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode %v, want 0600", st.Mode().Perm())
	}
}
