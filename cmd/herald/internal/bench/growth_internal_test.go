package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/devmail"
)

func TestGrowthNotesATenthMore(t *testing.T) {
	var g growth
	steps := []struct {
		rss, anon uint64
		want      bool
	}{
		{100 << 20, 50 << 20, true},  // the first sample
		{105 << 20, 52 << 20, false}, // under a tenth
		{111 << 20, 52 << 20, true},  // RSS grew by a tenth
		{111 << 20, 58 << 20, false}, // anon under 8 MiB more
		{111 << 20, 61 << 20, true},  // anon grew by 8 MiB and a tenth
		{90 << 20, 40 << 20, false},  // shrinking is no peak
	}
	for i, s := range steps {
		if got := g.note(s.rss, s.anon); got != s.want {
			t.Fatalf("sample %d (%d, %d MiB): got %v, want %v", i, s.rss>>20, s.anon>>20, got, s.want)
		}
	}
}

func TestDecilesArePacedFromTheTenthBefore(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	got := decilesOf(1000, start, []time.Time{at(500), at(1500), at(1500)})
	want := []Decile{{100, 500, 200}, {200, 1500, 100}, {300, 1500, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tenth %d: got %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

func TestCollectorNotesEachTenthOfItsRecipients(t *testing.T) {
	c := newCollector("tag", false, 20)
	for i := range 20 {
		c.add(devmail.Message{Subject: "tag", To: []string{fmt.Sprintf("s%d@x", i)}}, time.Unix(int64(i), 0))
		c.add(devmail.Message{Subject: "tag", To: []string{fmt.Sprintf("s%d@x", i)}}, time.Unix(int64(i+100), 0)) // a duplicate counts once
	}
	if len(c.tenths) != 10 {
		t.Fatalf("%d tenths: %v", len(c.tenths), c.tenths)
	}
	for i, at := range c.tenths {
		if want := int64(2*i + 1); at.Unix() != want {
			t.Errorf("tenth %d at %d, want %d (its 2nd recipient's first copy)", i+1, at.Unix(), want)
		}
	}
}
