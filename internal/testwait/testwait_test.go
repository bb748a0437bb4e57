package testwait_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/internal/testwait"
)

// For returns once the condition holds, having polled until then.
func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	testwait.For(t, "the third poll", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("%d polls, want 3", n.Load())
	}
}

// Until returns once the check passes.
func TestUntilReturnsOnceTheCheckPasses(t *testing.T) {
	var n atomic.Int32
	testwait.Until(t, "the second poll", func() error {
		if n.Add(1) < 2 {
			return errors.New("first")
		}
		return nil
	})
	if n.Load() != 2 {
		t.Fatalf("%d polls, want 2", n.Load())
	}
}
