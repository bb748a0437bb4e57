//go:build unix

package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the file under the data dir that a herald process holding
// the dir keeps locked (flock); the kernel releases the lock when the
// process dies, however it dies.
const LockFile = "herald.lock"

// dirLock is a held data dir lock.
type dirLock struct{ f *os.File }

// lockDataDir takes the data dir's lock without waiting, or returns
// ErrDataDirInUse.
func lockDataDir(dir string) (*dirLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrDataDirInUse, dir)
		}
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	return &dirLock{f: f}, nil
}

// release gives the lock up. It is safe on a nil lock.
func (l *dirLock) release() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
		l.f = nil
	}
}
