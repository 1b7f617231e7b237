package gitrepo

import (
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeRoot is where the commit's files are placed in Kustomize's in-memory file system.
const kustomizeRoot = "/repo"

// kustomizeBuild runs `kustomize build` (the Kustomize Go API, default options: files only from
// within each kustomization's root, no plugins, no Helm) on path p of the commit, in memory.
// Remote bases and resources are refused: rendering must not make drover fetch arbitrary URLs.
func kustomizeBuild(co *checkout, p string) ([]byte, error) {
	if err := refuseRemote(co); err != nil {
		return nil, err
	}
	fs := filesys.MakeFsInMemory()
	for _, m := range []map[string][]byte{co.files, co.other} {
		for name, data := range m {
			if err := fs.WriteFile(path.Join(kustomizeRoot, name), data); err != nil {
				return nil, fmt.Errorf("stage %s: %w", name, err)
			}
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, path.Join(kustomizeRoot, p))
	if err != nil {
		return nil, fmt.Errorf("kustomize: %s", strings.ReplaceAll(err.Error(), kustomizeRoot+"/", ""))
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize output: %w", err)
	}
	return out, nil
}

// refuseRemote fails on a kustomization anywhere in the commit that names a remote base,
// component or resource (a URL, or a go-getter style host/path?ref=).
func refuseRemote(co *checkout) error {
	for name, data := range co.files {
		if !isKustomization(path.Base(name)) {
			continue
		}
		var k struct {
			Resources  []string `json:"resources"`
			Bases      []string `json:"bases"`
			Components []string `json:"components"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			continue // Kustomize reports it, with its own message
		}
		for _, r := range append(append(k.Resources, k.Bases...), k.Components...) {
			if strings.Contains(r, "://") || strings.Contains(r, "?ref=") || strings.HasPrefix(r, "git@") ||
				strings.HasPrefix(r, "github.com/") || strings.HasPrefix(r, "gitlab.com/") || strings.HasPrefix(r, "bitbucket.org/") {
				return fmt.Errorf("%s: remote resource %q: remote bases and resources are not supported; vendor them into the repository", name, r)
			}
		}
	}
	return nil
}
