package projections

import (
	"bytes"
	"encoding/base64"

	bolt "go.etcd.io/bbolt"

	"github.com/heraldhq/herald/apierr"
)

// ErrBadCursor is returned by a list given a cursor it did not issue. It
// is a validation error of the field cursor: the API answers it 422
// validation_failed, the problem in its details.
var ErrBadCursor error = &apierr.ValidationError{Code: apierr.CodeValidationFailed, Message: "projections: invalid cursor",
	Problems: []apierr.FieldProblem{{Field: "cursor", Problem: "is not a cursor this API issued"}}}

// Page selects one page of a list: at most Limit items after Cursor (the
// nextCursor of the previous page; empty for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// listTenant walks bucket keys of one tenant (tenant\x00id) in key order,
// after the cursor, and decodes up to p.Limit items. Key order makes
// paging stable under concurrent writes: an item present during the whole
// walk is returned exactly once.
func listTenant[T any](b *bolt.Bucket, tenant string, p Page, decode func(id string, v []byte) (T, bool, error)) ([]T, string, error) {
	return listPrefix(b, key(tenant, ""), p, decode)
}

// listPrefix is listTenant over any key prefix: ids are what follows it.
func listPrefix[T any](b *bolt.Bucket, prefix []byte, p Page, decode func(id string, v []byte) (T, bool, error)) ([]T, string, error) {
	start := prefix
	if p.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil {
			return nil, "", ErrBadCursor
		}
		start = append(append(append([]byte{}, prefix...), after...), 0)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	// A small start, not room for limit rows: Channels lists without a
	// limit on every delivery, and a tenant has a few channels.
	out := make([]T, 0, min(limit, 8))
	c := b.Cursor()
	var lastID string
	for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		id := string(k[len(prefix):])
		if len(out) == limit {
			return out, base64.RawURLEncoding.EncodeToString([]byte(lastID)), nil
		}
		item, ok, err := decode(id, v)
		if err != nil {
			return nil, "", err
		}
		if ok {
			out = append(out, item)
			lastID = id
		}
	}
	return out, "", nil
}

// scan is how scanPrefix walks: Desc walks from the last key back, and
// MaxRead bounds the keys one page reads (zero: no bound).
type scan struct {
	Desc    bool
	MaxRead int
}

// scanPrefix is listPrefix in either direction, with a bound on the work
// of one page: a filtered walk that reads MaxRead keys before filling the
// page ends there, short (even empty), its cursor after the last key
// read, so a caller pages on through a sparse match in bounded steps.
func scanPrefix[T any](b *bolt.Bucket, prefix []byte, p Page, o scan, decode func(id string, v []byte) (T, bool, error)) ([]T, string, error) {
	var after []byte
	if p.Cursor != "" {
		a, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil {
			return nil, "", ErrBadCursor
		}
		after = append(append([]byte{}, prefix...), a...)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	out := make([]T, 0, min(limit, 8))
	c := b.Cursor()
	var k, v []byte
	switch {
	case !o.Desc && after == nil:
		k, v = c.Seek(prefix)
	case !o.Desc:
		k, v = c.Seek(append(after, 0))
	case after != nil:
		// The first key before after.
		k, v = c.Seek(after)
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, after) >= 0 {
			k, v = c.Prev()
		}
	default:
		// The last key with the prefix: the one before the first key
		// past it.
		end := append(append([]byte{}, prefix...), 0xff)
		k, v = c.Seek(end)
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, end) >= 0 {
			k, v = c.Prev()
		}
	}
	next := func() ([]byte, []byte) {
		if o.Desc {
			return c.Prev()
		}
		return c.Next()
	}
	read := 0
	var lastID string
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = next() {
		id := string(k[len(prefix):])
		if len(out) == limit || (o.MaxRead > 0 && read == o.MaxRead) {
			return out, base64.RawURLEncoding.EncodeToString([]byte(lastID)), nil
		}
		read++
		item, ok, err := decode(id, v)
		if err != nil {
			return nil, "", err
		}
		if ok {
			out = append(out, item)
		}
		lastID = id
	}
	return out, "", nil
}
