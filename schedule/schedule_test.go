package schedule_test

import (
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
