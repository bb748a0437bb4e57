// Package localtime is the arithmetic of local time, in one place for
// the quiet hours of preferences, the engine's delays until a local time
// and its digests' schedules read in a subscriber's zone: the zone of an
// IANA name ([Location]), a time of day ([Clock]), the next instant a
// clock reads a time of day in a zone, across daylight saving changes
// ([Next]), and a daily window of two times of day ([Window]).
//
// Everything here is a pure function of its arguments and Go's zone
// database. It imports no package of Herald's.
package localtime

import (
	"fmt"
	"strconv"
	"time"
)

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

// Next returns the first instant after after whose wall clock in loc
// reads c. It counts in calendar days, not in 24 hours, so a daylight
// saving change between the two moves nothing: 09:00 stays 09:00. A
// clock time the change skips (02:30 on a spring-forward night) is the
// instant as far past the jump as the time is into the gap (03:30 after
// a jump from 02:00 to 03:00); a clock time read twice (an autumn night)
// is its first reading.
func Next(after time.Time, c Clock, loc *time.Location) time.Time {
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
