// Package testwait waits in tests for a condition to hold: the one poll
// loop of the suite. Its bound only ends a hang (a stall, a lost event):
// it measures nothing, and a loaded machine that is merely slow never
// reaches it.
package testwait

import (
	"errors"
	"testing"
	"time"
)

// HangGuard is how long a wait lasts before it fails the test: long
// enough that only a stall reaches it (the slowest wait it replaced, a
// child process's fail-over under load, was given as long), short of
// go test's own timeout.
const HangGuard = 3 * time.Minute

// tick is the pause between two polls.
const tick = 10 * time.Millisecond

// For polls cond until it holds, and fails tb naming what when it still
// does not after HangGuard.
func For(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Until(tb, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Until polls check until it returns nil, and fails tb naming what and
// check's last error (the state it saw) when it still does not after
// HangGuard.
func Until(tb testing.TB, what string, check func() error) {
	tb.Helper()
	guard := time.Now().Add(HangGuard)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(guard) {
			if err == errNotYet {
				tb.Fatalf("%s: not within %v (a hang)", what, HangGuard)
			}
			tb.Fatalf("%s: not within %v (a hang): %v", what, HangGuard, err)
		}
		time.Sleep(tick)
	}
}

// errNotYet is For's check error: the condition does not hold yet.
var errNotYet = errors.New("not yet")
