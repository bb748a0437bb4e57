package projections

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// view runs fn in a read transaction.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.guarded(func() error { return s.db.View(fn) })
}

// guarded runs fn, a transaction on s.db (s.dbMu held). A panic in it
// that bbolt's consistency check confirms as a damaged file becomes an
// error wrapping ErrCorrupt and marks the store corrupt (see Store.corrupt);
// any other panic goes on.
func (s *Store) guarded(fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		cerr := recovering(func() error {
			return s.db.View(func(tx *bolt.Tx) error {
				for err := range tx.Check() {
					return err
				}
				return nil
			})
		})
		if cerr == nil {
			panic(r)
		}
		s.log.Error("projection file corrupt; stopping, it is rebuilt at the next start",
			"path", s.path, "panic", fmt.Sprint(r), "check", cerr)
		s.corruptOnce.Do(func() { close(s.corrupt) })
		err = fmt.Errorf("%w: %v", ErrCorrupt, r)
	}()
	return fn()
}

// recovering runs fn, turning a panic into an error wrapping ErrCorrupt.
func recovering(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	return fn()
}

func (s *Store) isCorrupt() bool {
	select {
	case <-s.corrupt:
		return true
	default:
		return false
	}
}
