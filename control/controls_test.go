package control

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckControlSchemas(t *testing.T) {
	ok := `{"type":"object","properties":{"subject":{"type":"string","default":"Hi"}}}`
	for _, tt := range []struct {
		name    string
		schemas map[string]string
		want    string // "" when accepted
	}{
		{"accepted", map[string]string{"welcome": ok}, ""},
		{"no default", map[string]string{"welcome": `{"type":"object","properties":{"subject":{"type":"string"}}}`},
			`w.controls.welcome: property "subject" has no default`},
		{"not an object schema", map[string]string{"welcome": `{"type":"array"}`}, `w.controls.welcome: must be of "type": "object"`},
		{"a default the schema refuses", map[string]string{"welcome": `{"type":"object","properties":{"n":{"type":"integer","default":"x"}}}`},
			"w.controls.welcome: the defaults do not fit the schema: n"},
		{"a remote reference", map[string]string{"welcome": `{"type":"object","$id":"https://example.com/s","properties":{}}`},
			"w.controls.welcome: "},
		{"an empty step id", map[string]string{"": ok}, "w.controls: names a step id"},
		{"too large", map[string]string{"welcome": `{"type":"object","description":"` + strings.Repeat("x", 70000) + `","properties":{}}`},
			"w.controls: is over 65536 bytes"},
	} {
		schemas := map[string]json.RawMessage{}
		for k, v := range tt.schemas {
			schemas[k] = json.RawMessage(v)
		}
		p := checkControlSchemas("w", schemas)
		switch {
		case tt.want == "" && len(p) > 0:
			t.Errorf("%s: refused: %v", tt.name, p)
		case tt.want != "" && (len(p) != 1 || !strings.HasPrefix(p[0].Field+": "+p[0].Problem, tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, p, tt.want)
		}
	}
}
