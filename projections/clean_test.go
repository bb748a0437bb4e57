package projections

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// fillAndFindRoot writes enough rows into the notifications bucket that it
// has pages of its own, and returns its root page.
func fillAndFindRoot(t *testing.T, s *Store) uint64 {
	t.Helper()
	var root uint64
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketNotifs)
		for i := range 2000 {
			if err := b.Put(key("ten_1", fmt.Sprintf("txn\x00s%05d", i)), []byte(`{"status":"received"}`)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(bucketNotifs).Root())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatal("the bucket is inline")
	}
	return root
}

// smash overwrites page pgid of the file at path with zeros.
func smash(t *testing.T, path string, pgid uint64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, os.Getpagesize()), int64(pgid)*int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
}

// TestOpenChecksOnlyAfterACrash: a file left by a crash (not closed) is
// checked page by page (bbolt's check), and a broken one is moved aside;
// a file Close left behind is marked clean and skips that check. Every
// open reads every page (the free pages are not kept in the file), so a
// page damaged in a cleanly closed file is found at open all the same, and
// the file moved aside.
func TestOpenChecksOnlyAfterACrash(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("the page arithmetic below assumes 4 KiB pages")
	}
	quiet := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.db")
	s, err := Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	root := fillAndFindRoot(t, s)

	// A crash: the file as it is while the store is open.
	crashed := filepath.Join(dir, "crashed.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crashed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	smash(t, crashed, root)
	c, err := Open(crashed, quiet)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(crashed + ".corrupt"); err != nil {
		t.Errorf("a broken file left by a crash was not moved aside: %v", err)
	}

	// A clean close: marked, and trusted by the next open.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta).Get(keyClean) == nil {
			t.Error("Close did not mark the file clean")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	smash(t, path, root)
	s, err = Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(path + ".corrupt"); err != nil {
		t.Errorf("a damaged page in a cleanly closed file was not found at open: %v", err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta).Get(keyClean) != nil {
			t.Error("Open left the clean mark: a crash now would skip the check")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
