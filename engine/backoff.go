package engine

import (
	"math/rand/v2"
	"time"
)

// maxBackoff caps the wait before a retry.
const maxBackoff = 5 * time.Minute

// backoff returns the wait before attempt n+1 after attempt n failed:
// base × 2^(n-1), capped at 5 minutes, plus an upward jitter of 0–25 %
// (jitter is a fraction in [0,1)).
func backoff(base time.Duration, n int, jitter float64) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	return d + time.Duration(float64(d)*0.25*jitter)
}

func randomJitter() float64 { return rand.Float64() }
