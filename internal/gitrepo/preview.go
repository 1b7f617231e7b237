package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
)

// RenderedBundle is the Bundle one path of a GitRepo renders to.
type RenderedBundle struct {
	// Name is the Bundle's name (BundleName of the GitRepo and Path).
	Name string
	// Path is the directory of the repository it was rendered from.
	Path string
	// Spec is the Bundle spec the controller would write.
	Spec fleetv1alpha1.BundleSpec
}

// RenderDir renders the paths of gr from a local directory, exactly as the controller renders
// a commit (plain manifests, Kustomize, drover.yaml, Helm charts), for previews such as
// `drover bundle diff`. The files of dir are placed at the repository path at ("." or "": dir
// is the repository's root), as a commit's tree would hold them: regular files only (no
// symlinks), no .git, and not the files a .gitignore below dir ignores.
func RenderDir(ctx context.Context, gr *fleetv1alpha1.GitRepo, dir, at string) ([]RenderedBundle, error) {
	co, err := readDir(dir, cleanPath(at))
	if err != nil {
		return nil, err
	}
	return renderAll(ctx, co, gr)
}

var commitish = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// RenderRevision clones gr's repository at revision (a branch, a tag or a commit) without
// credentials, as the controller clones (go-git, in memory), and renders it. It returns the
// commit rendered. Unlike the controller it accepts file:// URLs and local paths: it runs on
// the caller's machine, with the caller's rights.
func RenderRevision(ctx context.Context, gr *fleetv1alpha1.GitRepo, revision string) (string, []RenderedBundle, error) {
	spec := gr.Spec.DeepCopy()
	spec.Branch, spec.Tag, spec.Revision = "", "", ""
	switch {
	case revision == "":
		return "", nil, errors.New("no revision")
	case commitish.MatchString(revision):
		spec.Revision = revision
	default:
		// A branch or tag: a shallow clone of it, as the controller makes; else a commit
		// expression (HEAD~1, a short SHA), which needs the whole history.
		spec.Branch = revision
		found, err := exists(ctx, spec)
		if err == nil && !found {
			spec.Branch, spec.Tag = "", revision
			found, err = exists(ctx, spec)
		}
		if err != nil {
			return "", nil, err
		}
		if !found {
			spec.Tag, spec.Revision = "", revision
		}
	}
	co, err := fetch(ctx, spec, nil, nil)
	if err != nil {
		return "", nil, err
	}
	out, err := renderAll(ctx, co, gr)
	return co.commit, out, err
}

// exists reports whether the branch or tag of spec exists (git ls-remote).
func exists(ctx context.Context, spec *fleetv1alpha1.GitRepoSpec) (bool, error) {
	_, err := resolve(ctx, spec, nil, nil)
	var se *syncError
	if errors.As(err, &se) && se.reason == fleetv1alpha1.ReasonRevisionNotFound {
		return false, nil
	}
	return err == nil, err
}

func renderAll(ctx context.Context, co *checkout, gr *fleetv1alpha1.GitRepo) ([]RenderedBundle, error) {
	rs, err := render(ctx, co, gr)
	if err != nil {
		return nil, err
	}
	out := make([]RenderedBundle, len(rs))
	for i, r := range rs {
		out[i] = RenderedBundle{Name: r.name, Path: r.path, Spec: r.spec}
	}
	return out, nil
}

// readDir loads a local directory as read loads a commit, its files placed at path at.
func readDir(dir, at string) (*checkout, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	co := &checkout{commit: "local", files: map[string][]byte{}, dirs: []string{"."}}
	for d := at; d != "."; d = path.Dir(d) {
		co.dirs = append(co.dirs, d) // the directories above the files
	}
	var ignore []gitignore.Pattern
	var others []string
	needAll := false // a Kustomization or a Helm chart: keep every file (as read does)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != "." && (d.Name() == ".git" || ignored(ignore, strings.Split(rel, "/"), d.IsDir())) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if ignore, err = readGitignore(ignore, p, rel); err != nil {
				return err
			}
			if rel != "." {
				co.dirs = append(co.dirs, atPath(at, rel))
			}
			return nil
		}
		name := atPath(at, rel)
		if !d.Type().IsRegular() {
			return nil // symlinks and the like: a commit's symlinks are skipped too
		}
		needAll = needAll || isKustomization(d.Name()) || d.Name() == "Chart.yaml"
		if !isManifestFile(name) && d.Name() != "Kustomization" {
			others = append(others, name)
			return nil
		}
		data, err := readLocal(dir, name, at)
		if err != nil {
			return err
		}
		co.files[name] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if needAll {
		co.other = map[string][]byte{}
		for _, name := range others {
			data, err := readLocal(dir, name, at)
			if err != nil {
				return nil, err
			}
			co.other[name] = data
		}
	}
	return co, nil
}

// atPath is the repository path of rel, a slash path below the directory placed at at.
func atPath(at, rel string) string {
	if at == "." {
		return rel
	}
	return at + "/" + rel
}

// readLocal reads the file of repository path name from dir (placed at at), bounded as a
// commit's files are.
func readLocal(dir, name, at string) ([]byte, error) {
	rel := name
	if at != "." {
		rel = strings.TrimPrefix(name, at+"/")
	}
	f := filepath.Join(dir, filepath.FromSlash(rel))
	info, err := os.Stat(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f, err)
	}
	if info.Size() > maxFileSize {
		return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "%s: %d bytes, more than the %d a file may have", name, info.Size(), maxFileSize)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f, err)
	}
	return data, nil
}

// readGitignore adds the patterns of dir's .gitignore (rel: dir's slash path below the root).
func readGitignore(ps []gitignore.Pattern, dir, rel string) ([]gitignore.Pattern, error) {
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return ps, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, ".gitignore"), err)
	}
	var domain []string
	if rel != "." {
		domain = strings.Split(rel, "/")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimRight(line, "\r"); line != "" && !strings.HasPrefix(line, "#") {
			ps = append(ps, gitignore.ParsePattern(line, domain))
		}
	}
	return ps, nil
}

// ignored reports whether a .gitignore pattern excludes the path (the last matching one wins,
// as in git).
func ignored(ps []gitignore.Pattern, p []string, dir bool) bool {
	for i := len(ps) - 1; i >= 0; i-- {
		if m := ps[i].Match(p, dir); m != gitignore.NoMatch {
			return m == gitignore.Exclude
		}
	}
	return false
}
