package projections

import "errors"

var (
	// ErrNotFound is returned by a read whose record does not exist (or
	// belongs to another tenant).
	ErrNotFound = errors.New("projections: not found")
	// ErrClosed is returned by waits on a closed store.
	ErrClosed = errors.New("projections: store closed")
)
