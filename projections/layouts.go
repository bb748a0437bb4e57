package projections

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// bucketLayouts holds the tenant's email layouts.
var bucketLayouts = []byte("layouts") // tenant\x00layoutId → Layout

// Layout is an email layout: HTML with one {{content}}, where a send's
// HTML goes.
type Layout struct {
	LayoutID  string    `json:"layoutId"`
	Name      string    `json:"name"`
	HTML      string    `json:"html"`
	Default   bool      `json:"default"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Seq       uint64    `json:"seq"`
}

func layoutModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.LayoutSaved:   decoded(applyLayoutSaved),
		events.LayoutDeleted: decoded(applyLayoutDeleted),
	}, [][]byte{bucketLayouts}
}

func applyLayoutSaved(tx *bolt.Tx, ev eventlog.Event, d events.LayoutSavedData) error {
	b := tx.Bucket(bucketLayouts)
	k := key(ev.TenantID, d.LayoutID)
	var l Layout
	if ok, err := getJSON(b, k, &l); err != nil {
		return err
	} else if !ok {
		l.CreatedAt = ev.At
	}
	l.LayoutID, l.Name, l.HTML, l.Default, l.UpdatedAt, l.Seq = d.LayoutID, d.Name, d.HTML, d.Default, ev.At, ev.Seq
	if d.Default {
		// One default a tenant: the one before is unmarked.
		prefix := key(ev.TenantID, "")
		var others []Layout
		c := b.Cursor()
		for ok, data := c.Seek(prefix); ok != nil && bytes.HasPrefix(ok, prefix); ok, data = c.Next() {
			var o Layout
			if err := json.Unmarshal(data, &o); err != nil {
				return err
			}
			if o.Default && o.LayoutID != d.LayoutID {
				o.Default = false
				others = append(others, o)
			}
		}
		for _, o := range others {
			if err := putJSON(b, key(ev.TenantID, o.LayoutID), o); err != nil {
				return err
			}
		}
	}
	return putJSON(b, k, l)
}

func applyLayoutDeleted(tx *bolt.Tx, ev eventlog.Event, d events.LayoutDeletedData) error {
	return tx.Bucket(bucketLayouts).Delete(key(ev.TenantID, d.LayoutID))
}

// Layouts returns the tenant's layouts in id order.
func (s *Store) Layouts(tenant string) ([]Layout, error) {
	var out []Layout
	prefix := key(tenant, "")
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLayouts).Cursor()
		for k, data := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, data = c.Next() {
			var l Layout
			if err := json.Unmarshal(data, &l); err != nil {
				return err
			}
			out = append(out, l)
		}
		return nil
	})
	return out, err
}

// Layout returns one layout; ErrNotFound when the tenant has none of id.
func (s *Store) Layout(tenant, id string) (Layout, error) {
	var l Layout
	err := s.view(func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketLayouts), key(tenant, id), &l)
		if err == nil && !ok {
			return ErrNotFound
		}
		return err
	})
	return l, err
}

// DefaultLayout returns the tenant's default layout; false when none is
// marked.
func (s *Store) DefaultLayout(tenant string) (Layout, bool, error) {
	ls, err := s.Layouts(tenant)
	for _, l := range ls {
		if l.Default {
			return l, true, err
		}
	}
	return Layout{}, false, err
}
