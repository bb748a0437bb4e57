package bench

import "testing"

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
