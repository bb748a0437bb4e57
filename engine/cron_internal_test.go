package engine

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/schedule"
)

// A tick handled late is followed by every instant the window still
// covers; ticks older than the window collapse into the one that fired.
func TestCronCatchUp(t *testing.T) {
	everySecond, err := schedule.Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		at     time.Time
		window time.Duration
		want   time.Time // the next tick armed
	}{
		{"on time", now, time.Minute, now.Add(time.Second)},
		{"5s late under load", now.Add(-5 * time.Second), time.Minute, now.Add(-4 * time.Second)},
		{"late by a lost process's AckWait", now.Add(-30 * time.Second), time.Minute, now.Add(-29 * time.Second)},
		{"down an hour", now.Add(-time.Hour), time.Minute, now.Add(-59 * time.Second)},
		{"down an hour, wider window", now.Add(-time.Hour), 10 * time.Minute, now.Add(-599 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := everySecond.Next(catchUpFrom(tc.at, now, tc.window))
			if err != nil {
				t.Fatal(err)
			}
			if !next.Equal(tc.want) {
				t.Fatalf("next tick %v, want %v", next, tc.want)
			}
		})
	}
}
