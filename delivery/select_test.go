package delivery

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	c := func(key, kind string, enabled bool, priority int, created time.Time, seq uint64) Candidate {
		return Candidate{ChannelKey: key, Kind: kind, Enabled: enabled, Priority: priority, CreatedAt: created, Seq: seq}
	}
	tests := []struct {
		name  string
		cands []Candidate
		kind  string
		want  string // ChannelKey; "" for ErrNoChannel
	}{
		{"none at all", nil, "email", ""},
		{"only one", []Candidate{c("a", "email", true, 0, t0, 1)}, "email", "a"},
		{"lowest priority wins", []Candidate{
			c("a", "email", true, 2, t0, 1), c("b", "email", true, 1, t1, 2), c("c", "email", true, 3, t0, 3),
		}, "email", "b"},
		{"priority beats age", []Candidate{c("old", "email", true, 1, t0, 1), c("new", "email", true, 0, t1, 2)}, "email", "new"},
		{"tie goes to the oldest", []Candidate{c("new", "email", true, 0, t1, 1), c("old", "email", true, 0, t0, 2)}, "email", "old"},
		{"same instant: lower Seq", []Candidate{c("b", "email", true, 0, t0, 9), c("a", "email", true, 0, t0, 4)}, "email", "a"},
		{"same instant and Seq: lower key", []Candidate{c("b", "email", true, 0, t0, 1), c("a", "email", true, 0, t0, 1)}, "email", "a"},
		{"disabled skipped though better", []Candidate{c("off", "email", false, 0, t0, 1), c("on", "email", true, 5, t1, 2)}, "email", "on"},
		{"all disabled", []Candidate{c("a", "email", false, 0, t0, 1), c("b", "email", false, 1, t0, 2)}, "email", ""},
		{"other kinds skipped", []Candidate{c("sms", "sms", true, 0, t0, 1), c("mail", "email", true, 9, t1, 2)}, "email", "mail"},
		{"no channel of the kind", []Candidate{c("mail", "email", true, 0, t0, 1)}, "push", ""},
		{"kind is case-sensitive", []Candidate{c("mail", "email", true, 0, t0, 1)}, "Email", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The answer must not depend on the order of the candidates.
			reversed := slices.Clone(tt.cands)
			slices.Reverse(reversed)
			for _, cands := range [][]Candidate{tt.cands, reversed} {
				got, err := Select(cands, tt.kind)
				if tt.want == "" {
					if !errors.Is(err, ErrNoChannel) || err.Error() != `delivery: no enabled channel: "`+tt.kind+`"` {
						t.Fatalf("Select = %+v, %v; want ErrNoChannel naming %q", got, err, tt.kind)
					}
					continue
				}
				if err != nil || got.ChannelKey != tt.want {
					t.Fatalf("Select = %q, %v; want %q", got.ChannelKey, err, tt.want)
				}
			}
		})
	}
}
