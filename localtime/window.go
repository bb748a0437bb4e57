package localtime

import (
	"fmt"
	"time"
)

// Window is a daily window of local time: it contains Start and ends at
// End; an End before Start crosses midnight (22:00 to 07:30).
type Window struct {
	Start, End Clock
}

// ParseWindow reads a window's two ends, "HH:MM" each; they must differ
// (a window that ends when it starts would hold nothing, or everything).
func ParseWindow(start, end string) (Window, error) {
	s, err := ParseClock(start)
	if err != nil {
		return Window{}, err
	}
	e, err := ParseClock(end)
	if err != nil {
		return Window{}, err
	}
	if s == e {
		return Window{}, fmt.Errorf("start and end are both %s", start)
	}
	return Window{Start: s, End: e}, nil
}

// sinceMidnight is how far t's wall clock is into its day.
func sinceMidnight(t time.Time) time.Duration {
	h, m, s := t.Clock()
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second +
		time.Duration(t.Nanosecond())
}

// Contains reports whether the wall clock of t in loc falls in w. A
// window whose ends are equal (the zero Window) contains nothing.
func (w Window) Contains(t time.Time, loc *time.Location) bool {
	if w.Start == w.End {
		return false
	}
	start, end := time.Duration(w.Start)*time.Minute, time.Duration(w.End)*time.Minute
	x := sinceMidnight(t.In(loc))
	if start < end {
		return start <= x && x < end
	}
	return x >= start || x < end
}

// EndAfter returns when the window of w that contains t ends: the next
// reading of End in loc after t. Meaningful when w contains t.
func (w Window) EndAfter(t time.Time, loc *time.Location) time.Time {
	return Next(t, w.End, loc)
}
