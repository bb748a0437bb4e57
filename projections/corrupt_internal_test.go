package projections

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldhq/herald/internal/testnats"
	bolt "go.etcd.io/bbolt"
)

// A page damaged while the file is open (an open reads every page, so
// this is damage since) makes bbolt panic at the first read of it. The
// panic does not escape: the read fails with ErrCorrupt, the projector
// stops with it, and Close moves the file aside so the next Open rebuilds
// it: a damaged read model costs a rebuild from the log, never a crash
// loop.
func TestDamagedPageFoundAtReadIsRebuilt(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skip("the page arithmetic assumes 4 KiB pages")
	}
	quiet := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	root := fillAndFindRoot(t, s)
	smash(t, path, root) // the open file's map shows the write

	err = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNotifs).ForEach(func(k, v []byte) error { return nil })
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a damaged page: %v, want ErrCorrupt", err)
	}
	log := testnats.Log(t)
	if err := s.Run(context.Background(), log, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("projector on a corrupt file: %v, want ErrCorrupt", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".corrupt"); err != nil {
		t.Fatalf("corrupt file not moved aside: %v", err)
	}
	s, err = Open(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Applied() != 0 {
		t.Fatalf("reopened: applied %d, want a new file", s.Applied())
	}
}
