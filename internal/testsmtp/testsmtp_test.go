package testsmtp

import (
	"testing"
	"time"
)

// TestCleanupRightAfterStart: a server closed at once, before its Serve
// goroutine may have started, still stops (its cleanup used to wait for
// ever when Close ran first).
func TestCleanupRightAfterStart(t *testing.T) {
	for range 50 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			t.Run("start-and-stop", func(t *testing.T) { Start(t, Options{}) })
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a server closed right after its start never stopped")
		}
	}
}
