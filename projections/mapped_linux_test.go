package projections

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rssFile is this process's resident pages of mapped files, in bytes.
func rssFile(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// Pages of the projection file that reads mapped in leave the process's
// resident set on ReleaseMapped, and read the same after.
func TestReleaseMappedDropsTheFilesPagesFromRSS(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n, size = 8192, 4000 // ~32 MB of values
	bucket := []byte("test")
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucket)
		if err != nil {
			return err
		}
		for i := range n {
			k := binary.BigEndian.AppendUint32(nil, uint32(i))
			if err := b.Put(k, bytes.Repeat([]byte{byte(i)}, size)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		t.Helper()
		var got int
		if err := s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
				i := binary.BigEndian.Uint32(k)
				if len(v) != size || v[0] != byte(i) || v[size-1] != byte(i) {
					t.Fatalf("value %d reads wrong", i)
				}
				got++
				return nil
			})
		}); err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Fatalf("%d values, want %d", got, n)
		}
	}
	readAll()
	before := rssFile(t)
	if err := s.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	if before-after < n*size/2 {
		t.Fatalf("RssFile %d MB before, %d MB after: want at least %d MB released", before>>20, after>>20, n*size/2>>20)
	}
	readAll()
	if again := rssFile(t); again-after < n*size/2 {
		t.Fatalf("RssFile %d MB after reading again, want the pages mapped again", again>>20)
	}
}
