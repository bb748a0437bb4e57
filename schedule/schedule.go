// Package schedule parses the cron schedules workflows declare and
// computes their ticks: a gronx expression (5 fields, 6 with seconds
// first, or an @daily-style tag) in a time zone given as an optional
// "CRON_TZ=Area/City " (or "TZ=") prefix, UTC by default.
//
// It is a leaf of the service: control validates a sync's schedules with
// it, the engine arms and fires their ticks with it.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones for CRON_TZ, whatever the host has

	"github.com/adhocore/gronx"
)

// Schedule is a parsed cron schedule.
type Schedule struct {
	Expr string
	Loc  *time.Location
}

// Parse parses a workflow's schedule.
func Parse(s string) (Schedule, error) { return ParseIn(s, time.UTC) }

// ParseIn parses a schedule read in loc unless it names its own zone (a
// digest's schedule, read in its subscriber's zone).
func ParseIn(s string, loc *time.Location) (Schedule, error) {
	sch := Schedule{Expr: strings.TrimSpace(s), Loc: loc}
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(sch.Expr, p); ok {
			zone, expr, _ := strings.Cut(rest, " ")
			loc, err := time.LoadLocation(zone)
			if err != nil {
				return Schedule{}, fmt.Errorf("unknown time zone %q", zone)
			}
			sch.Expr, sch.Loc = strings.TrimSpace(expr), loc
		}
	}
	if !gronx.IsValid(sch.Expr) {
		return Schedule{}, fmt.Errorf("%q is not a cron expression (5 fields, 6 with seconds first, or a tag like @daily)", sch.Expr)
	}
	return sch, nil
}

// Next returns the first tick strictly after t, in UTC.
func (s Schedule) Next(t time.Time) (time.Time, error) {
	// gronx works in whole seconds: start from the second t is in, so the
	// tick at that second is not repeated.
	n, err := gronx.NextTickAfter(s.Expr, t.In(s.Loc).Truncate(time.Second), false)
	if err != nil {
		return time.Time{}, err
	}
	return n.UTC(), nil
}

// Horizon is how far ahead a schedule must tick to be one: an
// expression whose next tick is further off (the 30th of February, a
// year long past) never fires in any life a run or a workflow has, and
// is refused. Eight years keeps every expression of a leap day: 29
// February comes every four years, and eight apart across a century
// year that is not a leap year (2096, then 2104).
const Horizon = 8 * 366 * 24 * time.Hour

// ErrNeverFires: a schedule has no tick within Horizon.
var ErrNeverFires = errors.New("the expression never fires")

// NextWithin returns the first tick strictly after t, in UTC, or
// ErrNeverFires when there is none within Horizon of t.
func (s Schedule) NextWithin(t time.Time) (time.Time, error) {
	n, err := s.Next(t)
	if err != nil || n.Sub(t) > Horizon {
		return time.Time{}, fmt.Errorf("%q: %w (no tick within %d years)", s.Expr, ErrNeverFires, int(Horizon/(366*24*time.Hour)))
	}
	return n, nil
}

// intervalSamples is how many consecutive ticks MinInterval compares.
const intervalSamples = 32

// MinInterval returns the shortest gap between consecutive ticks of s
// among the 32 ticks after from; false when s ticks less than twice.
func (s Schedule) MinInterval(from time.Time) (time.Duration, bool) {
	var gap time.Duration
	found := false
	prev, err := s.Next(from)
	if err != nil {
		return 0, false
	}
	for range intervalSamples {
		next, err := s.Next(prev)
		if err != nil {
			break
		}
		if d := next.Sub(prev); !found || d < gap {
			gap, found = d, true
		}
		prev = next
	}
	return gap, found
}
