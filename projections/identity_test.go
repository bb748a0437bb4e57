package projections

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	bolt "go.etcd.io/bbolt"
)

func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// aside lists the files next to path whose names start with path's base
// name and suffix.
func aside(t *testing.T, path, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(path + suffix + "*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOpenBindsTheFileToItsStream: a file made from one stream instance is
// replaced when opened for another, or when its checkpoint is beyond the
// stream's end; a file with no record adopts the stream.
func TestOpenBindsTheFileToItsStream(t *testing.T) {
	one := eventlog.Identity{ID: "EVENTS@2026-01-01T00:00:00Z", LastSeq: 2000}
	cases := []struct {
		name   string
		first  eventlog.Identity // the file is made with this identity
		then   eventlog.Identity // and opened with this one
		stale  bool
		record string // the identity the file records afterwards
	}{
		{"same stream", one, one, false, one.ID},
		{"same stream, longer now", one, eventlog.Identity{ID: one.ID, LastSeq: 9000}, false, one.ID},
		{"another stream", one, eventlog.Identity{ID: "EVENTS@2026-02-02T00:00:00Z", LastSeq: 5000}, true, "EVENTS@2026-02-02T00:00:00Z"},
		{"checkpoint beyond the stream", one, eventlog.Identity{ID: one.ID, LastSeq: 10}, true, one.ID},
		{"no record: adopts", eventlog.Identity{}, one, false, one.ID},
		{"not checked", one, eventlog.Identity{}, false, one.ID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.db")
			opts := quietOptions()
			opts.Stream = c.first
			s, err := Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			fillAndFindRoot(t, s)
			if err := s.db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyCheckpoint, []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe8}) // 1000
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			opts.Stream = c.then
			s, err = Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			moved := aside(t, path, ".stale-")
			if c.stale {
				if len(moved) != 1 || s.Applied() != 0 || rows(t, s) != 0 {
					t.Fatalf("stale file kept: moved %v, applied %d, rows %d", moved, s.Applied(), rows(t, s))
				}
			} else if len(moved) != 0 || s.Applied() != 1000 || rows(t, s) != 2000 {
				t.Fatalf("good file replaced: moved %v, applied %d, rows %d", moved, s.Applied(), rows(t, s))
			}
			if got := s.StreamID(); got != c.record {
				t.Fatalf("records stream %q, want %q", got, c.record)
			}
		})
	}
}

// TestOpenRebuildsAFileOfOtherReadModels: a file whose read models another
// version of herald built (one without an index this one reads, say) is
// moved aside and rebuilt; a file of this version is kept.
func TestOpenRebuildsAFileOfOtherReadModels(t *testing.T) {
	for _, version := range []string{"", "1", ModelsVersion} {
		path := filepath.Join(t.TempDir(), "p.db")
		s, err := Open(path, quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		fillAndFindRoot(t, s)
		if err := s.db.Update(func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketMeta).Put(keyCheckpoint, []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe8}); err != nil {
				return err
			}
			if version == "" {
				return tx.Bucket(bucketMeta).Delete(keyModels)
			}
			return tx.Bucket(bucketMeta).Put(keyModels, []byte(version))
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = Open(path, quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		moved := aside(t, path, ".stale-")
		if version == ModelsVersion {
			if len(moved) != 0 || s.Applied() != 1000 {
				t.Errorf("version %q: file of this version replaced: moved %v, applied %d", version, moved, s.Applied())
			}
		} else if len(moved) != 1 || s.Applied() != 0 || rows(t, s) != 0 {
			t.Errorf("version %q: file of other read models kept: moved %v, applied %d", version, moved, s.Applied())
		}
		s.Close()
	}
}

// TestOpenSurvivesACorruptCleanFile: a file closed cleanly (so not checked
// page by page) whose free-list page was overwritten makes bbolt panic on
// open; Open moves it aside and starts empty instead of panicking.
func TestOpenSurvivesACorruptCleanFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	fillAndFindRoot(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Find the free-list page and overwrite it with garbage.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var freelist, pageSize int
	if err := db.View(func(tx *bolt.Tx) error {
		pageSize = db.Info().PageSize
		for id := 0; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			if p.Type == "freelist" {
				freelist = id
				return nil
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if freelist == 0 {
		t.Fatal("no free-list page found")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", pageSize/4))
	if _, err := f.WriteAt(garbage, int64(freelist*pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s, err = Open(path, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if moved := aside(t, path, ".corrupt"); len(moved) != 1 {
		t.Fatalf("corrupt file not moved aside: %v", moved)
	}
	if s.Applied() != 0 || rows(t, s) != 0 {
		t.Fatalf("the new file is not empty: applied %d", s.Applied())
	}
}

// rows counts the notification rows fillAndFindRoot wrote.
func rows(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketNotifs).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
