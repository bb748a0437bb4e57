package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/heraldhq/herald/runstate"
)

func lenBytes(k string, v []byte) int64 { return int64(len(v)) }

// The cache holds at most its budget in estimated bytes, evicting the
// least recently used first; an entry over the whole budget is not kept.
func TestByteCacheBoundsBytes(t *testing.T) {
	t.Parallel()
	c := newByteCache(100, lenBytes)
	c.put("a", make([]byte, 40))
	c.put("b", make([]byte, 40))
	if _, ok := c.get("a"); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	c.put("c", make([]byte, 40)) // 120 > 100: b goes
	if _, ok := c.get("b"); ok {
		t.Fatal("b kept past the budget")
	}
	if _, ok := c.get("a"); !ok {
		t.Fatal("a evicted although used more recently than b")
	}
	if c.bytes() != 80 || c.len() != 2 {
		t.Fatalf("%d bytes in %d entries", c.bytes(), c.len())
	}
	c.put("a", make([]byte, 10)) // a put again is re-sized
	if c.bytes() != 50 {
		t.Fatalf("%d bytes after a shrank", c.bytes())
	}
	c.put("huge", make([]byte, 101))
	if _, ok := c.get("huge"); ok || c.bytes() != 50 {
		t.Fatalf("an entry over the budget kept (%d bytes)", c.bytes())
	}
	c.drop("a")
	c.drop("c")
	if c.bytes() != 0 || c.len() != 0 {
		t.Fatalf("%d bytes in %d entries after dropping all", c.bytes(), c.len())
	}
}

// Run states count by their outputs: 1 MiB of budget holds many small
// states but only a few carrying 300 KB outputs. On main the cache held
// 200,000 states whatever their size.
func TestStateCacheCountsOutputs(t *testing.T) {
	t.Parallel()
	c := newStateCache(1 << 20)
	out, _ := json.Marshal(strings.Repeat("o", 300_000))
	for i := range 10 {
		c.put(&runstate.State{RunID: string(rune('a' + i)), Status: runstate.Running,
			Steps: []runstate.Step{{StepID: "s", Type: "run", Status: runstate.StepDone, Output: out}}})
	}
	if n := c.size(); n != 3 {
		t.Fatalf("%d states of 300 KB held in 1 MiB, want 3", n)
	}
	for i := range 1000 {
		c.put(&runstate.State{RunID: "small" + string(rune(i)), Status: runstate.Running})
	}
	if c.runs.bytes() > 1<<20 {
		t.Fatalf("%d bytes held", c.runs.bytes())
	}
}

// bytes is the estimated size of the entries held.
func (c *byteCache[V]) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
