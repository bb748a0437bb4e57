package preferences

import (
	"time"

	"github.com/heraldhq/herald/localtime"
)

// QuietHours is a daily window, in the subscriber's time zone (UTC when it
// has none), in which sends of non-critical workflows are held until the
// window ends. Start and End are local clock times "HH:MM"; End before
// Start crosses midnight ("22:00" to "07:30"). A window contains Start and
// ends at End: a send at End goes out.
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// window is q's two ends, or an error when either does not parse or they
// are equal.
func (q QuietHours) window() (localtime.Window, error) { return localtime.ParseWindow(q.Start, q.End) }

// Hold is the quiet hours' decision on one send: Until is zero when the
// send goes now; otherwise it is held until then, by Window read in
// Timezone ("" for UTC).
type Hold struct {
	Until    time.Time   `json:"until"`
	Window   *QuietHours `json:"window,omitempty"`
	Timezone string      `json:"timezone,omitempty"`
}

// Held reports whether the send waits.
func (h Hold) Held() bool { return !h.Until.IsZero() }

// QuietHold decides whether a send of kind in workflow, at now, to a
// subscriber with preferences d and time zone tz, the workflow declaring
// def, is held by the subscriber's quiet hours, and until when. A
// critical workflow is never held, nor a send that d's switches skip
// anyway (see [Allows]): it is skipped now. The engine decides every
// send with it and records the decision, so that the same inputs explain
// a held send afterwards.
func QuietHold(d Doc, workflow string, def Defaults, kind, tz string, now time.Time) Hold {
	q := d.QuietHours
	if q == nil || def.Critical || !Allows(d, workflow, def, kind) {
		return Hold{}
	}
	loc := localtime.Location(tz)
	w, err := q.window()
	if err != nil || !w.Contains(now, loc) {
		return Hold{}
	}
	held := *q
	return Hold{Until: w.EndAfter(now, loc).UTC(), Window: &held, Timezone: tz}
}
