package engine

import (
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/localtime"
)

// location is the run's subscriber's time zone, as the Bridge saw it: UTC
// when it has none, or the run has no subscriber.
func (t *turn) location() *time.Location {
	if t.sub == nil {
		return time.UTC
	}
	return localtime.Location(t.sub.Timezone)
}

// nextLocal is the first instant after now whose clock reads hhmm in the
// run's subscriber's time zone (checked "HH:MM" by bridgeclient). It is
// recorded as the delay's end, so a replay never computes it again.
func (t *turn) nextLocal(hhmm string, now time.Time) time.Time {
	h, m, _ := wire.ParseLocalTime(hhmm)
	return localtime.Next(now, localtime.Clock(h*60+m), t.location()).UTC()
}
