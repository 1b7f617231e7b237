package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/text"
)

// syncError is a failure with the stable reason the Synced condition reports.
type syncError struct {
	reason string
	msg    string
	err    error
}

func (e *syncError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *syncError) Unwrap() error { return e.err }

func failf(reason string, err error, format string, args ...any) *syncError {
	return &syncError{reason: reason, msg: fmt.Sprintf(format, args...), err: err}
}

// maxFileSize bounds a manifest file read from a repository.
const maxFileSize = 4 << 20

// checkout is the manifest-related content of one commit.
type checkout struct {
	commit string
	// files holds the contents of every *.yaml, *.yml and *.json file by slash path.
	files map[string][]byte
	// other holds every other file, only when the commit has a Kustomization (which may
	// read any file, e.g. for a configMapGenerator) or a Helm chart (templates/_helpers.tpl,
	// NOTES.txt, .helmignore, files/...).
	other map[string][]byte
	// charts caches the charts downloaded from Helm repositories for this commit, by
	// repository, name and version asked for.
	charts map[string]repoChart
	// dirs holds every directory of the tree ("." for the root).
	dirs []string
	// helm is how charts are downloaded (the GitRepo's spec.helmSecretName), set before each
	// render: the Secret may change while the commit does not.
	helm *helmAccess
}

// endpoint parses and checks a repository URL: only network protocols (never file:// or a
// local path, which would read drover's own file system).
func endpoint(repo string) (*transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(repo)
	if err != nil {
		return nil, failf(fleetv1alpha1.ReasonFetchFailed, nil, "repo %q is not a Git URL", text.RedactRepo(repo))
	}
	// Older objects (the CRD refuses new ones): the URL is not repeated, it holds the secret.
	if ep.Password != "" {
		return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil,
			"spec.repo carries a password: remove it from the URL and put the credentials in a Secret named by spec.clientSecretName")
	}
	switch ep.Protocol {
	case "https", "http", "git":
		if ep.User != "" {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil,
				"spec.repo carries a user or token before the host: remove it from the URL and put the credentials in a Secret named by spec.clientSecretName")
		}
		if _, rest, _ := strings.Cut(repo, "://"); strings.ContainsAny(rest, "?#") {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil,
				"spec.repo carries a query or fragment: remove it from the URL and put the credentials in a Secret named by spec.clientSecretName")
		}
		return ep, nil
	case "ssh":
		return ep, nil
	}
	return nil, failf(fleetv1alpha1.ReasonFetchFailed, nil, "repo %q: protocol %q is not supported (use https, http, ssh or git)", repo, ep.Protocol)
}

// authFor builds the credentials for repo from the auth Secret (nil: none). Secret values never
// appear in the errors.
func authFor(ep *transport.Endpoint, secretName string, secret *corev1.Secret) (transport.AuthMethod, error) {
	ssh := ep.Protocol == "ssh"
	if secret == nil {
		if ssh {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil,
				"SSH repositories need spec.clientSecretName: a Secret with %s and %s", fleetv1alpha1.GitKeySSHPrivateKey, fleetv1alpha1.GitKeyKnownHosts)
		}
		return nil, nil
	}
	d := secret.Data
	if ssh {
		key, hosts := d[fleetv1alpha1.GitKeySSHPrivateKey], d[fleetv1alpha1.GitKeyKnownHosts]
		if len(key) == 0 || len(hosts) == 0 {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil,
				"Secret %s: SSH needs the keys %s and %s (host keys are always checked; get them with ssh-keyscan)", secretName, fleetv1alpha1.GitKeySSHPrivateKey, fleetv1alpha1.GitKeyKnownHosts)
		}
		user := ep.User
		if user == "" {
			user = "git"
		}
		pk, err := gitssh.NewPublicKeys(user, key, string(d[fleetv1alpha1.GitKeySSHPassphrase]))
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil, "Secret %s: %s is not a usable private key (wrong format or passphrase)", secretName, fleetv1alpha1.GitKeySSHPrivateKey)
		}
		file, err := knownHostsFile(hosts)
		if err != nil {
			return nil, err
		}
		db, err := gitssh.NewKnownHostsDb(file)
		_ = os.Remove(file)
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, err, "Secret %s: %s is not in known_hosts format", secretName, fleetv1alpha1.GitKeyKnownHosts)
		}
		port := ep.Port
		if port == 0 {
			port = 22
		}
		pk.HostKeyCallback = db.HostKeyCallback()
		pk.HostKeyAlgorithms = db.HostKeyAlgorithms(net.JoinHostPort(ep.Host, fmt.Sprint(port)))
		return pk, nil
	}
	pass := d[fleetv1alpha1.GitKeyPassword]
	if len(pass) == 0 {
		pass = d[fleetv1alpha1.GitKeyToken]
	}
	if len(pass) == 0 && len(d[fleetv1alpha1.GitKeyCACerts]) > 0 && len(d[fleetv1alpha1.GitKeyUsername]) == 0 {
		return nil, nil // a Secret with only the server's CA: no credentials
	}
	if len(pass) == 0 {
		return nil, failf(fleetv1alpha1.ReasonClientSecretInvalid, nil,
			"Secret %s: HTTP(S) needs the key %s (with %s) or %s", secretName, fleetv1alpha1.GitKeyPassword, fleetv1alpha1.GitKeyUsername, fleetv1alpha1.GitKeyToken)
	}
	user := string(d[fleetv1alpha1.GitKeyUsername])
	if user == "" {
		user = "git"
	}
	return &githttp.BasicAuth{Username: user, Password: string(pass)}, nil
}

// knownHostsFile writes known_hosts content to a private temporary file (the parser reads
// files); the caller removes it once parsed.
func knownHostsFile(content []byte) (string, error) {
	f, err := os.CreateTemp("", "drover-known-hosts-*")
	if err != nil {
		return "", fmt.Errorf("write known_hosts: %w", err)
	}
	_, werr := f.Write(content)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("write known_hosts: %w", err)
	}
	return f.Name(), nil
}

// classify turns a go-git error into a syncError with a stable reason.
func classify(err error, what string) error {
	var se *syncError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return failf(fleetv1alpha1.ReasonAuthFailed, err, "%s: the Git server refused the credentials (check spec.clientSecretName)", what)
	case strings.Contains(err.Error(), "x509: "):
		return failf(fleetv1alpha1.ReasonFetchFailed, err, "%s: the server's TLS certificate is not trusted (add its CA as %s to spec.clientSecretName's Secret)", what, fleetv1alpha1.GitKeyCACerts)
	case strings.Contains(err.Error(), "unable to authenticate"), strings.Contains(err.Error(), "knownhosts:"),
		strings.Contains(err.Error(), "host key"):
		return failf(fleetv1alpha1.ReasonAuthFailed, err, "%s: SSH authentication failed (check the private key and known_hosts)", what)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		// go-git's own text adds nothing ("repository not found: ").
		return failf(fleetv1alpha1.ReasonFetchFailed, nil, "%s: repository not found: check spec.repo (a private repository answers "+
			"not found without valid credentials: check spec.clientSecretName too)", what)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return failf(fleetv1alpha1.ReasonRevisionNotFound, err, "%s: the repository has no commits", what)
	}
	return failf(fleetv1alpha1.ReasonFetchFailed, err, "%s", what)
}

// wantedRef is the reference spec asks for: a branch or tag name, or "" for the default branch
// (HEAD) or a revision.
func wantedRef(spec *fleetv1alpha1.GitRepoSpec) plumbing.ReferenceName {
	switch {
	case spec.Branch != "":
		return plumbing.NewBranchReferenceName(spec.Branch)
	case spec.Tag != "":
		return plumbing.NewTagReferenceName(spec.Tag)
	case spec.Revision != "":
		return ""
	}
	return plumbing.HEAD
}

// resolve asks the server (git ls-remote) for the commit the spec's branch or tag points to.
// For a revision it returns the revision itself when it is a full SHA, else "".
func resolve(ctx context.Context, spec *fleetv1alpha1.GitRepoSpec, auth transport.AuthMethod, caBundle []byte) (string, error) {
	if spec.Revision != "" {
		if len(spec.Revision) == 40 {
			return spec.Revision, nil
		}
		return "", nil
	}
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{spec.Repo}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth, CABundle: caBundle, PeelingOption: git.AppendPeeled})
	if err != nil {
		return "", classify(err, "list "+spec.Repo)
	}
	want := wantedRef(spec)
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	r := byName[want]
	for i := 0; r != nil && r.Type() == plumbing.SymbolicReference && i < 5; i++ {
		r = byName[r.Target()]
	}
	if r == nil {
		return "", failf(fleetv1alpha1.ReasonRevisionNotFound, nil, "%s not found in %s", spec.Follows(), spec.Repo)
	}
	if peeled := byName[plumbing.ReferenceName(string(r.Name())+"^{}")]; peeled != nil {
		return peeled.Hash().String(), nil // an annotated tag: the commit it points to
	}
	return r.Hash().String(), nil
}

// fetch clones the spec's revision (shallow for a branch or tag, into memory, without a
// working tree) and reads the manifest files of its commit.
func fetch(ctx context.Context, spec *fleetv1alpha1.GitRepoSpec, auth transport.AuthMethod, caBundle []byte) (*checkout, error) {
	opts := &git.CloneOptions{URL: spec.Repo, Auth: auth, CABundle: caBundle, NoCheckout: true, Tags: git.NoTags}
	if ref := wantedRef(spec); ref != "" && ref != plumbing.HEAD {
		opts.ReferenceName, opts.SingleBranch, opts.Depth = ref, true, 1
	} else if ref == plumbing.HEAD {
		opts.SingleBranch, opts.Depth = true, 1
	}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, opts)
	if err != nil {
		if errors.Is(err, plumbing.ErrReferenceNotFound) || strings.Contains(err.Error(), "couldn't find remote ref") {
			return nil, failf(fleetv1alpha1.ReasonRevisionNotFound, err, "%s not found in %s", spec.Follows(), spec.Repo)
		}
		return nil, classify(err, "clone "+spec.Repo)
	}
	var hash plumbing.Hash
	if spec.Revision != "" {
		h, err := repo.ResolveRevision(plumbing.Revision(spec.Revision))
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonRevisionNotFound, nil, "revision %s not found in %s", spec.Revision, spec.Repo)
		}
		hash = *h
	} else {
		head, err := repo.Head()
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonRevisionNotFound, err, "%s of %s", spec.Follows(), spec.Repo)
		}
		hash = head.Hash()
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		tag, terr := repo.TagObject(hash)
		if terr != nil {
			return nil, failf(fleetv1alpha1.ReasonRevisionNotFound, err, "%s of %s is not a commit", spec.Follows(), spec.Repo)
		}
		if commit, err = tag.Commit(); err != nil {
			return nil, failf(fleetv1alpha1.ReasonRevisionNotFound, err, "tag %s of %s does not point to a commit", spec.Tag, spec.Repo)
		}
	}
	return read(commit)
}

// read loads the manifest-like files (*.yaml, *.yml, *.json) of a commit and lists its
// directories. Symlinks and submodules are skipped.
func read(commit *object.Commit) (*checkout, error) {
	tree, err := commit.Tree()
	if err != nil {
		return nil, failf(fleetv1alpha1.ReasonFetchFailed, err, "read the tree of commit %s", commit.Hash)
	}
	co := &checkout{commit: commit.Hash.String(), files: map[string][]byte{}}
	seen := map[string]bool{".": true}
	co.dirs = append(co.dirs, ".")
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	var others []object.TreeEntry
	var otherNames []string
	needAll := false // a Kustomization or a Helm chart: keep every file
	load := func(name string, entry *object.TreeEntry) ([]byte, error) {
		f, err := tree.TreeEntryFile(entry)
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonFetchFailed, err, "read %s", name)
		}
		if f.Size > maxFileSize {
			return nil, failf(fleetv1alpha1.ReasonRenderFailed, nil, "%s: %d bytes, more than the %d a file may have", name, f.Size, maxFileSize)
		}
		s, err := f.Contents()
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonFetchFailed, err, "read %s", name)
		}
		return []byte(s), nil
	}
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, failf(fleetv1alpha1.ReasonFetchFailed, err, "walk the tree of commit %s", commit.Hash)
		}
		switch entry.Mode {
		case filemode.Dir:
			if !seen[name] {
				seen[name] = true
				co.dirs = append(co.dirs, name)
			}
		case filemode.Regular, filemode.Executable:
			needAll = needAll || isKustomization(path.Base(name)) || path.Base(name) == chartFile
			if !isManifestFile(name) && path.Base(name) != "Kustomization" {
				others, otherNames = append(others, entry), append(otherNames, name)
				continue
			}
			data, err := load(name, &entry)
			if err != nil {
				return nil, err
			}
			co.files[name] = data
		}
	}
	if needAll {
		co.other = map[string][]byte{}
		for i := range others {
			data, err := load(otherNames[i], &others[i])
			if err != nil {
				return nil, err
			}
			co.other[otherNames[i]] = data
		}
	}
	return co, nil
}

func isKustomization(base string) bool {
	return base == "kustomization.yaml" || base == "kustomization.yml" || base == "Kustomization"
}

func isManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
