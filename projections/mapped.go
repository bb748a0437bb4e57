package projections

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"
)

// releaseMappedEvery is how often Run drops the process's mappings of the
// projection file's pages (see ReleaseMapped).
const releaseMappedEvery = 2 * time.Second

// ReleaseMapped drops this process's mappings of the projection file's
// pages; the pages themselves stay in the kernel's page cache, and the
// next read of one maps it again without I/O.
//
// bbolt reads the file through a shared, read-only memory map, and a page
// once read stays mapped, counted in the process's resident set
// (RssFile), until the process unmaps it. Run ids are hashes, so the
// writes of a large fan-out spread over every page of the runs and
// deliveries buckets: without this the resident set grows with the file
// (hundreds of MB at 100,000 runs), though none of it is the process's
// own memory. On systems other than Linux it does nothing.
func (s *Store) ReleaseMapped() error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	// A read transaction keeps the map in place: bbolt remaps (when the
	// file grows) only under an exclusive lock that waits for it.
	return s.db.View(func(tx *bolt.Tx) error {
		return dropMapped(s.db.Info().Data, tx.Size())
	})
}

// releaseMapped calls ReleaseMapped every releaseMappedEvery until ctx
// ends.
func (s *Store) releaseMapped(ctx context.Context) {
	t := time.NewTicker(releaseMappedEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.ReleaseMapped(); err != nil && ctx.Err() == nil {
				s.log.Debug("projections: could not release the file's mapped pages", "err", err)
			}
		case <-ctx.Done():
			return
		}
	}
}
