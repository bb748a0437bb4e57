package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/schedule"
)

func TestParse(t *testing.T) {
	from := time.Date(2026, 11, 22, 12, 0, 0, 500e6, time.UTC)
	cases := []struct {
		in   string
		next time.Time
		bad  bool
	}{
		{"*/2 * * * * *", time.Date(2026, 11, 22, 12, 0, 2, 0, time.UTC), false},
		{"0 9 * * *", time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), false},
		{"@daily", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), false},
		{"CRON_TZ=America/New_York 0 9 * * *", time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC), false},
		{"TZ=Europe/Paris 0 9 * * *", time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), false},
		{"CRON_TZ=Mars/Olympus 0 9 * * *", time.Time{}, true},
		{"every day", time.Time{}, true},
		{"61 * * * *", time.Time{}, true},
	}
	for _, c := range cases {
		sch, err := schedule.Parse(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q accepted", c.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		next, err := sch.Next(from)
		if err != nil || !next.Equal(c.next) {
			t.Errorf("%q: next %v (%v), want %v", c.in, next, err, c.next)
		}
	}
}

// TestParseInZone: a schedule without a zone of its own is read in the
// zone given, its ticks in wall-clock time across daylight saving changes.
func TestParseInZone(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	for _, c := range []struct {
		in         string
		from, want time.Time
	}{
		{"0 9 * * 1-5", time.Date(2026, 6, 5, 8, 0, 0, 0, time.UTC), time.Date(2026, 6, 8, 7, 0, 0, 0, time.UTC)},           // Friday after 9 CEST: Monday
		{"0 9 * * *", time.Date(2026, 3, 28, 8, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC)},           // across spring forward
		{"0 9 * * *", time.Date(2026, 10, 24, 7, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 8, 0, 0, 0, time.UTC)},         // across fall back
		{"CRON_TZ=UTC 0 9 * * *", time.Date(2026, 6, 5, 8, 0, 0, 0, time.UTC), time.Date(2026, 6, 5, 9, 0, 0, 0, time.UTC)}, // its own zone wins
	} {
		sch, err := schedule.ParseIn(c.in, paris)
		if err != nil {
			t.Fatal(err)
		}
		if next, err := sch.Next(c.from); err != nil || !next.Equal(c.want) {
			t.Errorf("%q after %v: %v (%v), want %v", c.in, c.from, next, err, c.want)
		}
	}
}

func TestMinInterval(t *testing.T) {
	from := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"*/2 * * * * *": 2 * time.Second,
		"0 9 * * *":     24 * time.Hour,
		"0,5 * * * * *": 5 * time.Second,
		"*/15 * * * *":  15 * time.Minute,
	} {
		sch, err := schedule.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := sch.MinInterval(from); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, ok, want)
		}
	}
}

// TestNextWithin: an expression with no tick within Horizon never fires
// and is refused; a leap day, even across 2100, fires.
func TestNextWithin(t *testing.T) {
	from := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for expr, want := range map[string]string{
		"0 0 30 2 *":                   "never",
		"0 0 31 4 *":                   "never",
		"0 0 * * * 2020":               "never",
		"0 9 * * 1-5":                  "2026-11-30T09:00:00Z",
		"0 0 29 2 *":                   "2028-02-29T00:00:00Z",
		"0 0 1 1 * 2030":               "2030-01-01T00:00:00Z",
		"0 0 1 1 * 2040":               "never", // over 8 years ahead
		"CRON_TZ=Asia/Tokyo 0 9 1 1 *": "2027-01-01T00:00:00Z",
	} {
		s, err := schedule.Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got := "never"
		n, err := s.NextWithin(from)
		if err == nil {
			got = n.Format(time.RFC3339)
		} else if !errors.Is(err, schedule.ErrNeverFires) {
			t.Fatalf("%s: %v", expr, err)
		}
		if got != want {
			t.Errorf("%s: %s, want %s", expr, got, want)
		}
	}
	s, _ := schedule.Parse("0 0 29 2 *")
	if n, err := s.NextWithin(time.Date(2097, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n.Year() != 2104 {
		t.Errorf("a leap day across 2100: %v %v", n, err)
	}
}
