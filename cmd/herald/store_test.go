package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/service"
)

// corruptPages overwrites every page of a bbolt file after its two meta
// pages, as a stray write or a bad disk may.
func corruptPages(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	if len(data) <= 2*page {
		t.Fatalf("%s too small: %d bytes", path, len(data))
	}
	for i := 2 * page; i < len(data); i++ {
		data[i] = byte(0x5A ^ i)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A cleanly closed projections.db with overwritten pages panics neither
// `herald rebuild` nor `herald serve`: each moves it aside and rebuilds
// (the file is a read model; the log holds the truth).
func TestCorruptProjectionsRebuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	for _, k := range []string{"HERALD_NATS_URL", "HERALD_HTTP_ADDR", "HERALD_DATA_DIR", "HERALD_ADMIN_TOKEN", "HERALD_MASTER_KEY"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	h := testherald.Start(t, testherald.Options{DataDir: dir})
	_, key := h.Tenant("Acme")
	for _, topic := range []string{"a", "b", "c"} {
		if r := h.Do("PUT", "/v1/topics/"+topic, key, map[string]any{"name": topic}); r.Status != 201 {
			t.Fatalf("PUT topic: %d %s", r.Status, r.Body)
		}
	}
	h.Stop()
	path := filepath.Join(dir, service.ProjectionsFile)

	// herald rebuild.
	corruptPages(t, path)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"rebuild", "--data", dir}, &out, io.Discard); err != nil {
		t.Fatalf("rebuild of a corrupt file: %v", err)
	}
	if !strings.Contains(out.String(), "previous:    none") {
		t.Fatalf("rebuild compared with a corrupt file:\n%s", out.String())
	}
	h = testherald.Start(t, testherald.Options{DataDir: dir})
	if r := h.Do("GET", "/v1/topics/c", key, nil); r.Status != 200 {
		t.Fatalf("after rebuild: %d %s", r.Status, r.Body)
	}
	h.Stop()

	// herald serve.
	corruptPages(t, path)
	h = testherald.Start(t, testherald.Options{DataDir: dir})
	if r := h.Do("GET", "/v1/topics/b", key, nil); r.Status != 200 {
		t.Fatalf("serve on a corrupt file: %d %s", r.Status, r.Body)
	}
}
