package engine

import "testing"

// A run's bounds default to 1,000 steps and 8 MiB of outputs together; a
// configuration that sets them keeps its own.
func TestRunBoundsDefaults(t *testing.T) {
	t.Parallel()
	e, _, _ := newTestEngine(t, Config{})
	if e.cfg.MaxRunSteps != 1000 || e.cfg.MaxRunOutputBytes != 8<<20 {
		t.Fatalf("default bounds: %d steps, %d bytes", e.cfg.MaxRunSteps, e.cfg.MaxRunOutputBytes)
	}
	e, _, _ = newTestEngine(t, Config{MaxRunSteps: 3, MaxRunOutputBytes: 5})
	if e.cfg.MaxRunSteps != 3 || e.cfg.MaxRunOutputBytes != 5 {
		t.Fatalf("configured bounds: %d steps, %d bytes", e.cfg.MaxRunSteps, e.cfg.MaxRunOutputBytes)
	}
}
