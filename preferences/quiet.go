package preferences

import (
	"fmt"
	"strconv"
	"time"
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

// Clock is a local time of day, in minutes after midnight.
type Clock int

// ParseClock reads "HH:MM" (00:00 to 23:59, two digits each).
func ParseClock(s string) (Clock, error) {
	if len(s) != 5 || s[2] != ':' || !digits(s[:2]) || !digits(s[3:]) {
		return 0, fmt.Errorf("%q is not a time of day HH:MM", s)
	}
	h, _ := strconv.Atoi(s[:2])
	m, _ := strconv.Atoi(s[3:])
	if h > 23 || m > 59 {
		return 0, fmt.Errorf("%q is not a time of day 00:00 to 23:59", s)
	}
	return Clock(h*60 + m), nil
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// valid reports whether q's clocks parse and differ (a window that ends
// when it starts would hold nothing, or everything).
func (q QuietHours) valid() error {
	s, err := ParseClock(q.Start)
	if err != nil {
		return err
	}
	e, err := ParseClock(q.End)
	if err != nil {
		return err
	}
	if s == e {
		return fmt.Errorf("start and end are both %s", q.Start)
	}
	return nil
}

// sinceMidnight is how far t's wall clock is into its day.
func sinceMidnight(t time.Time) time.Duration {
	h, m, s := t.Clock()
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second +
		time.Duration(t.Nanosecond())
}

// Contains reports whether the wall clock of t in loc falls in q. A q
// that does not parse contains nothing.
func (q QuietHours) Contains(t time.Time, loc *time.Location) bool {
	if q.valid() != nil {
		return false
	}
	s, _ := ParseClock(q.Start)
	e, _ := ParseClock(q.End)
	start, end := time.Duration(s)*time.Minute, time.Duration(e)*time.Minute
	x := sinceMidnight(t.In(loc))
	if start < end {
		return start <= x && x < end
	}
	return x >= start || x < end
}

// NextLocal returns the first instant after after whose wall clock in loc
// reads c. It counts in calendar days, not in 24 hours, so a daylight
// saving change between the two moves nothing: 09:00 stays 09:00. A
// clock time the change skips (02:30 on a spring-forward night) is the
// instant as far past the jump as the time is into the gap (03:30 after
// a jump from 02:00 to 03:00); a clock time read twice (an autumn night)
// is its first reading.
func NextLocal(after time.Time, c Clock, loc *time.Location) time.Time {
	l := after.In(loc)
	h, m := int(c)/60, int(c)%60
	var at time.Time
	for day := 0; day < 3; day++ { // the next day's reading is always after
		at = time.Date(l.Year(), l.Month(), l.Day()+day, h, m, 0, 0, loc)
		for _, r := range readings(at, h, m) {
			if r.After(after) {
				return r
			}
		}
	}
	return at
}

// readings returns the instants, oldest first, whose wall clock reads h:m
// on at's day, at being one of them or (a skipped clock time) the
// instant time.Date gives: two around a clock set back (time.Date does
// not say which it returns), else one.
func readings(at time.Time, h, m int) []time.Time {
	var out []time.Time
	for k := -4; k <= 4; k++ { // zones move by 30 minutes to 2 hours
		c := at.Add(time.Duration(k) * 30 * time.Minute)
		if ch, cm, cs := c.Clock(); ch == h && cm == m && cs == 0 && c.Day() == at.Day() {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = append(out, at)
	}
	return out
}

// EndAfter returns when the window of q that contains t ends: the next
// reading of End in loc after t. Meaningful when q contains t.
func (q QuietHours) EndAfter(t time.Time, loc *time.Location) time.Time {
	e, err := ParseClock(q.End)
	if err != nil {
		return t
	}
	return NextLocal(t, e, loc)
}

// Location is the zone of an IANA name: UTC for "" and for a name the
// zone database does not know (names are validated where they are
// written, so the latter means the database changed under them).
func Location(tz string) *time.Location {
	if tz == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return time.UTC
	}
	return loc
}

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
	loc := Location(tz)
	if !q.Contains(now, loc) {
		return Hold{}
	}
	w := *q
	return Hold{Until: q.EndAfter(now, loc).UTC(), Window: &w, Timezone: tz}
}
