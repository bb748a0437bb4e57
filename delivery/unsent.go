package delivery

import (
	"sync"
	"time"
)

// unsentClaims remembers, for one Lease, the attempts this process
// claimed without knowing whether the claim was stored (its append went
// unanswered) and under which it sent nothing. It is bounded: the oldest
// are forgotten first, and a forgotten one waits out its lease.
type unsentClaims struct {
	mu  sync.Mutex
	ids map[string]time.Time // attempt id → until when it is remembered
}

const maxUnsentClaims = 4096

func (u *unsentClaims) add(attemptID string, lease time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	if u.ids == nil {
		u.ids = map[string]time.Time{}
	}
	if len(u.ids) >= maxUnsentClaims {
		for id, until := range u.ids {
			if now.After(until) {
				delete(u.ids, id)
			}
		}
		if len(u.ids) >= maxUnsentClaims {
			return
		}
	}
	u.ids[attemptID] = now.Add(lease)
}

func (u *unsentClaims) has(attemptID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	until, ok := u.ids[attemptID]
	return ok && time.Now().Before(until)
}
