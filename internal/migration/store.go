package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	migrationv1alpha1 "github.com/droverhq/drover/api/migration/v1alpha1"
)

// State is a migration's persisted progress.
type State struct {
	Spec   migrationv1alpha1.CloudProviderMigrationSpec   `json:"spec"`
	Status migrationv1alpha1.CloudProviderMigrationStatus `json:"status"`
}

// Store persists State. Save must be durable when it returns: the engine relies on it to never
// repeat an action after a crash.
type Store interface {
	Load(ctx context.Context) (*State, error)
	Save(ctx context.Context, s *State) error
}

// FileStore keeps State in a JSON file (the CLI path), replaced atomically on every save.
type FileStore struct{ Path string }

// ErrNoState means there is no state yet (a fresh migration).
var ErrNoState = errors.New("no migration state")

// Load reads the state file; ErrNoState if it does not exist.
func (f FileStore) Load(context.Context) (*State, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoState
	}
	if err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("parse state file %s: %w", f.Path, err)
	}
	return s, nil
}

// Save writes the state file through a synced temporary file and a rename.
func (f FileStore) Save(_ context.Context, s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	return WriteFileAtomic(f.Path, append(data, '\n'))
}

// WriteFileAtomic replaces path with data (same mode if it exists), fsynced, through a rename.
func WriteFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// MemoryStore keeps State in memory (tests, benchmarks).
type MemoryStore struct{ S *State }

// Load returns a copy of the state.
func (m *MemoryStore) Load(context.Context) (*State, error) {
	if m.S == nil {
		return nil, ErrNoState
	}
	return m.S.DeepCopy(), nil
}

// Save stores a copy of s.
func (m *MemoryStore) Save(_ context.Context, s *State) error {
	m.S = s.DeepCopy()
	return nil
}

// DeepCopy copies the state.
func (s *State) DeepCopy() *State {
	return &State{Spec: *s.Spec.DeepCopy(), Status: *s.Status.DeepCopy()}
}

// ErrLocked means another drover migrate (apply or rollback) holds the state file.
var ErrLocked = errors.New("another drover migrate holds the state file")
