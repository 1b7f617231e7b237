//go:build !unix

package migration

// Lock is a no-op where flock is not available.
func (f FileStore) Lock() (unlock func(), err error) { return func() {}, nil }
