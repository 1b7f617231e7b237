package helmchart

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/droverhq/drover/test/ocireg"
)

func TestFromOCI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := ocireg.New()
	reg.Username, reg.Password = "puller", "s3cret-registry-password"
	charts := map[string][]byte{}
	var corrupted string
	for _, v := range []string{"0.1.0", "0.2.0", "1.0.0-rc.1", "0.3.0"} {
		a, err := Package(testChart(v))
		if err != nil {
			t.Fatal(err)
		}
		charts[v] = a
		repo := "charts/web"
		if v == "0.3.0" {
			repo = "charts/broken" // its chart layer will not match its digest
		}
		reg.PushChart(repo, v, a, "")
		if v == "0.3.0" {
			corrupted = digest(a)
		}
	}
	reg.PushChart("images/app", "1.0.0", []byte("not a chart"), "application/vnd.oci.image.layer.v1.tar+gzip")
	tampered := bytes.Clone(charts["0.3.0"])
	tampered[len(tampered)-1] ^= 0xff
	reg.Corrupt(corrupted, tampered)
	srv := httptest.NewTLSServer(reg)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	creds := &Credentials{Username: reg.Username, Password: reg.Password}

	for _, tc := range []struct {
		name, ref, version, want, err string
		creds                         *Credentials
	}{
		{"latest stable", "oci://" + host + "/charts/web", "", "0.2.0", "", creds},
		{"exact", "oci://" + host + "/charts/web", "0.1.0", "0.1.0", "", creds},
		{"constraint", "oci://" + host + "/charts/web", "~0.1", "0.1.0", "", creds},
		{"tag in the reference", "oci://" + host + "/charts/web:1.0.0-rc.1", "", "1.0.0-rc.1", "", creds},
		{"tag and version disagree", "oci://" + host + "/charts/web:0.1.0", "0.2.0", "", "set one", creds},
		{"unknown version", "oci://" + host + "/charts/web", "9.9.9", "", "not found", creds},
		{"no matching version", "oci://" + host + "/charts/web", "^5", "", "no tagged version matches ^5", creds},
		{"unknown repository", "oci://" + host + "/charts/api", "", "", "charts/api", creds},
		{"not a chart", "oci://" + host + "/images/app", "1.0.0", "", "not a Helm chart", creds},
		{"digest mismatch", "oci://" + host + "/charts/broken", "0.3.0", "", "does not match its digest", creds},
		{"no credentials", "oci://" + host + "/charts/web", "0.1.0", "", "the registry needs credentials", nil},
		{"wrong password", "oci://" + host + "/charts/web", "0.1.0", "", "the registry refused the credentials", &Credentials{Username: "puller", Password: "wrong"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, v, err := FromOCI(ctx, srv.Client(), tc.ref, tc.version, tc.creds)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), reg.Password) {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want || !bytes.Equal(a, charts[tc.want]) {
				t.Errorf("version %s, want %s (same archive: %v)", v, tc.want, bytes.Equal(a, charts[tc.want]))
			}
		})
	}
	if _, _, err := FromOCI(ctx, srv.Client(), "https://"+host+"/charts/web", "", creds); err == nil {
		t.Error("a reference without oci:// accepted")
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
