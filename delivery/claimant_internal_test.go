package delivery

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Who is known dead decides whether an attempt in flight is taken over at
// once or waits for its lease.
func TestClaimantDead(t *testing.T) {
	alive := func(ok bool, err error) func(context.Context, string) (bool, error) {
		return func(context.Context, string) (bool, error) { return ok, err }
	}
	for _, c := range []struct {
		name  string
		cfg   Config
		entry ledgerEntry
		dead  bool
	}{
		{"this process", Config{Process: "p1", Alive: alive(false, nil)}, ledgerEntry{process: "p1", present: true}, false},
		{"sole process: any other is dead", Config{Process: "p1", SoleProcess: true}, ledgerEntry{process: "p0"}, true},
		{"gone from presence", Config{Process: "p1", Alive: alive(false, nil)}, ledgerEntry{process: "p2", present: true}, true},
		{"still present", Config{Process: "p1", Alive: alive(true, nil)}, ledgerEntry{process: "p2", present: true}, false},
		{"presence unanswered: alive", Config{Process: "p1", Alive: alive(false, errors.New("election"))}, ledgerEntry{process: "p2", present: true}, false},
		{"claimant kept no presence: its lease holds", Config{Process: "p1", Alive: alive(false, nil)}, ledgerEntry{process: "p2"}, false},
		{"no presence here: its lease holds", Config{Process: "p1"}, ledgerEntry{process: "p2", present: true}, false},
	} {
		s := &Service{cfg: c.cfg}
		if got := s.claimantDead(context.Background(), c.entry); got != c.dead {
			t.Errorf("%s: dead %v, want %v", c.name, got, c.dead)
		}
	}
	// A claim of this process whose append went unanswered sent nothing:
	// it is taken over at once; any other claim of this process is not.
	s := &Service{cfg: Config{Process: "p1", Lease: time.Minute}}
	s.unsent.add("att_lost", s.cfg.Lease)
	if !s.claimantDead(context.Background(), ledgerEntry{process: "p1", attemptID: "att_lost"}) {
		t.Error("an unanswered claim of this process is not taken over")
	}
	if s.claimantDead(context.Background(), ledgerEntry{process: "p1", attemptID: "att_sending"}) {
		t.Error("a claim this process may be sending under is taken over")
	}
	s.unsent.add("att_old", -time.Second)
	if s.claimantDead(context.Background(), ledgerEntry{process: "p1", attemptID: "att_old"}) {
		t.Error("an unanswered claim is remembered past its lease")
	}
}
