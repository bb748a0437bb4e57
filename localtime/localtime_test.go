package localtime_test

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/localtime"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseClock(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want localtime.Clock
		ok   bool
	}{
		{"00:00", 0, true}, {"09:05", 545, true}, {"23:59", 1439, true},
		{"24:00", 0, false}, {"12:60", 0, false}, {"9:00", 0, false}, {"09:00:00", 0, false},
		{"", 0, false}, {"ab:cd", 0, false}, {"-1:00", 0, false}, {"09-00", 0, false},
	} {
		got, err := localtime.ParseClock(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("ParseClock(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestWindowContains(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	night := window(t, "22:00", "07:30")
	lunch := window(t, "12:00", "13:00")
	for _, tc := range []struct {
		name string
		q    localtime.Window
		t    string
		loc  *time.Location
		want bool
	}{
		{"before a night window", night, "2026-06-01T21:59:59Z", time.UTC, false},
		{"at a night window's start", night, "2026-06-01T22:00:00Z", time.UTC, true},
		{"at midnight", night, "2026-06-02T00:00:00Z", time.UTC, true},
		{"just before its end", night, "2026-06-02T07:29:59.999Z", time.UTC, true},
		{"at its end", night, "2026-06-02T07:30:00Z", time.UTC, false},
		{"midday", night, "2026-06-02T12:00:00Z", time.UTC, false},
		{"a day window", lunch, "2026-06-02T12:30:00Z", time.UTC, true},
		{"after a day window", lunch, "2026-06-02T13:00:00Z", time.UTC, false},
		{"before a day window", lunch, "2026-06-02T11:59:00Z", time.UTC, false},
		// 20:30Z is 22:30 in Paris in summer (UTC+2): inside.
		{"read in the zone", night, "2026-06-01T20:30:00Z", paris, true},
		{"read in UTC", night, "2026-06-01T20:30:00Z", time.UTC, false},
		{"the zero window", localtime.Window{}, "2026-06-02T00:00:00Z", time.UTC, false},
		{"a window whose ends are equal", localtime.Window{Start: 420, End: 420}, "2026-06-02T07:00:00Z", time.UTC, false},
	} {
		if got := tc.q.Contains(at(t, tc.t), tc.loc); got != tc.want {
			t.Errorf("%s: Contains(%s) = %v, want %v", tc.name, tc.t, got, tc.want)
		}
	}
}

func TestNext(t *testing.T) {
	paris, ny := zone(t, "Europe/Paris"), zone(t, "America/New_York")
	nine, _ := localtime.ParseClock("09:00")
	half2, _ := localtime.ParseClock("02:30")
	half1, _ := localtime.ParseClock("01:30")
	for _, tc := range []struct {
		name  string
		after string
		c     localtime.Clock
		loc   *time.Location
		want  string
	}{
		{"later the same day", "2026-06-01T06:00:00Z", nine, time.UTC, "2026-06-01T09:00:00Z"},
		{"at the instant: the next day", "2026-06-01T09:00:00Z", nine, time.UTC, "2026-06-02T09:00:00Z"},
		{"past it: the next day", "2026-06-01T09:00:01Z", nine, time.UTC, "2026-06-02T09:00:00Z"},
		{"in a zone, summer", "2026-06-01T06:00:00Z", nine, paris, "2026-06-01T07:00:00Z"},
		{"in a zone, winter", "2026-01-10T06:00:00Z", nine, paris, "2026-01-10T08:00:00Z"},
		{"across the year's end", "2026-12-31T23:00:00Z", nine, paris, "2027-01-01T08:00:00Z"},
		// The night of 28 to 29 March 2026 Paris moves from UTC+1 to UTC+2:
		// 09:00 local is 08:00Z on the 28th and 07:00Z on the 29th, a
		// calendar day and 23 hours apart.
		{"across spring forward", "2026-03-28T08:00:00Z", nine, paris, "2026-03-29T07:00:00Z"},
		// 25 October 2026: back from UTC+2 to UTC+1, a day of 25 hours.
		{"across fall back", "2026-10-24T07:00:00Z", nine, paris, "2026-10-25T08:00:00Z"},
		// 02:30 does not exist on 29 March in Paris (02:00 jumps to
		// 03:00): it reads 03:30 CEST, 01:30Z.
		{"a skipped clock time", "2026-03-29T00:00:00Z", half2, paris, "2026-03-29T01:30:00Z"},
		// 02:30 happens twice on 25 October: the first one, CEST, 00:30Z.
		{"a clock time read twice", "2026-10-24T23:00:00Z", half2, paris, "2026-10-25T00:30:00Z"},
		// After the first reading, the second one (CET, 01:30Z) is the next.
		{"the second reading", "2026-10-25T00:30:00Z", half2, paris, "2026-10-25T01:30:00Z"},
		{"read twice in New York", "2026-11-01T04:00:00Z", half1, ny, "2026-11-01T05:30:00Z"},
	} {
		got := localtime.Next(at(t, tc.after), tc.c, tc.loc)
		if !got.Equal(at(t, tc.want)) {
			t.Errorf("%s: Next(%s, %d) = %s, want %s", tc.name, tc.after, tc.c, got.UTC().Format(time.RFC3339), tc.want)
		}
	}
}

func TestWindowEndAfter(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	night := window(t, "22:00", "07:30")
	for _, tc := range []struct {
		name, t string
		loc     *time.Location
		want    string
	}{
		{"before midnight", "2026-06-01T23:00:00Z", time.UTC, "2026-06-02T07:30:00Z"},
		{"after midnight", "2026-06-02T01:00:00Z", time.UTC, "2026-06-02T07:30:00Z"},
		{"in a zone", "2026-06-01T21:00:00Z", paris, "2026-06-02T05:30:00Z"},
		// The window of the night of 24 to 25 October (fall back) ends at
		// 07:30 CET, 06:30Z.
		{"across fall back", "2026-10-24T21:00:00Z", paris, "2026-10-25T06:30:00Z"},
	} {
		got := night.EndAfter(at(t, tc.t), tc.loc)
		if !got.Equal(at(t, tc.want)) {
			t.Errorf("%s: EndAfter(%s) = %s, want %s", tc.name, tc.t, got.UTC().Format(time.RFC3339), tc.want)
		}
	}
}

func window(t *testing.T, start, end string) localtime.Window {
	t.Helper()
	w, err := localtime.ParseWindow(start, end)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestParseWindow(t *testing.T) {
	for _, tc := range []struct {
		start, end string
		want       localtime.Window
		ok         bool
	}{
		{"22:00", "07:30", localtime.Window{Start: 1320, End: 450}, true},
		{"12:00", "13:00", localtime.Window{Start: 720, End: 780}, true},
		{"25:00", "07:00", localtime.Window{}, false},
		{"07:00", "7:00", localtime.Window{}, false},
		{"07:00", "07:00", localtime.Window{}, false},
	} {
		got, err := localtime.ParseWindow(tc.start, tc.end)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseWindow(%q, %q) = %+v, %v; want %+v, ok %v", tc.start, tc.end, got, err, tc.want, tc.ok)
		}
	}
}

func TestLocation(t *testing.T) {
	for tz, want := range map[string]string{"": "UTC", "Europe/Paris": "Europe/Paris", "Nowhere/Atlantis": "UTC"} {
		if got := localtime.Location(tz).String(); got != want {
			t.Errorf("Location(%q) = %s, want %s", tz, got, want)
		}
	}
}
