package apierr

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	cases := []struct {
		name string
		s    string
		max  int
		want bool
	}{
		{"plain", "user-1", 256, true},
		{"email and spaces are data", "a b@example.com/x.y", 256, true},
		{"unicode", "ユーザー", 4, true},
		{"empty", "", 256, false},
		{"one over in characters", "ユーザーx", 4, false},
		{"at the bound in characters, over in bytes", strings.Repeat("é", 10), 10, true},
		{"zero byte", "a\x00b", 256, false},
		{"newline", "a\nb", 256, false},
		{"DEL", "a\x7fb", 256, false},
		{"C1 control", "a\u0085b", 256, false},
		{"invalid UTF-8", "a\xffb", 256, false},
	}
	for _, c := range cases {
		if got := ValidID(c.s, c.max); got != c.want {
			t.Errorf("%s: ValidID(%q, %d) = %v, want %v", c.name, c.s, c.max, got, c.want)
		}
	}
}

func TestHasControl(t *testing.T) {
	if !HasControl("a\tb", "") {
		t.Error("a tab is a control character")
	}
	if HasControl("a\tb\nc", "\t\n") {
		t.Error("allowed control characters were reported")
	}
	if !HasControl("a\tb\rc", "\t\n") {
		t.Error("a carriage return outside the allowed set was not reported")
	}
}
