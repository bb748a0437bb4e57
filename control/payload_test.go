package control

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/heraldhq/herald/apierr"
)

func TestPayloadObject(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", MaxPayloadBytes) + `"}`
	cases := []struct {
		in, want string
		bad      bool
	}{
		{"", "", false},
		{"null", "", false},
		{" null ", "", false},
		{`{ "b": [1, 2.50], "a": {} }`, `{"b":[1,2.50],"a":{}}`, false},
		{`[1]`, "", true},
		{`"s"`, "", true},
		{`{"a":`, "", true},
		{big, "", true},
	}
	for _, c := range cases {
		var p apierr.Problems
		got := payloadObject("payload", json.RawMessage(c.in), &p)
		if string(got) != c.want || (len(p) > 0) != c.bad {
			t.Errorf("%.40q: %q %v, want %q bad=%v", c.in, got, p, c.want, c.bad)
		}
		if c.bad && p[0].Field != "payload" {
			t.Errorf("%.40q: problem names %q", c.in, p[0].Field)
		}
	}
}
