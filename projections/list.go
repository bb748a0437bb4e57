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
