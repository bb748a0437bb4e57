package projections

import (
	"errors"

	"github.com/heraldhq/herald/apierr"
)

var (
	// ErrNotFound is returned by a read whose record does not exist (or
	// belongs to another tenant). It is of kind apierr.ErrNotFound, code
	// not_found: the API answers one that reaches it 404.
	ErrNotFound error = apierr.New(apierr.CodeNotFound, "projections: not found")
	// ErrClosed is returned by waits on a closed store.
	ErrClosed = errors.New("projections: store closed")
	// ErrCorrupt wraps the reason a projection file cannot be used: bbolt
	// refused or panicked on it, or its consistency check failed. Open
	// replaces such a file; it reaches a caller only from Rebuild's
	// comparison with the old file.
	ErrCorrupt = errors.New("projections: corrupt file")
)
