//go:build !unix

package service

// LockFile is the file under the data dir that a herald process holding
// the dir keeps locked. Without flock (non-unix systems) nothing is
// locked: run one herald process per data dir.
const LockFile = "herald.lock"

type dirLock struct{}

func lockDataDir(string) (*dirLock, error) { return &dirLock{}, nil }

func (l *dirLock) release() {}
