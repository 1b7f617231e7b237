//go:build unix

package migration

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive lock on the state file (on <state>.lock beside it, which survives
// the state file's atomic replacement) for one apply or rollback. ErrLocked means another
// process holds it; the lock is released by unlock or when the process exits.
func (f FileStore) Lock() (unlock func(), err error) {
	path := f.Path + ".lock"
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state file: %w", err)
	}
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = fd.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (lock %s)", ErrLocked, f.Path, path)
		}
		return nil, fmt.Errorf("lock state file %s: %w", path, err)
	}
	return func() { _ = fd.Close() }, nil
}
