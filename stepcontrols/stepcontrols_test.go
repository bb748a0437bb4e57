package stepcontrols

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeLocale(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"fr", "fr", true},
		{"FR", "fr", true},
		{"fr-ca", "fr-CA", true},
		{"fr_CA", "fr-CA", true},
		{"zh-hant-tw", "zh-Hant-TW", true},
		{"es-419", "es-419", true},
		{"", "", false},
		{"f", "", false},
		{"fr-", "", false},
		{"fr CA", "", false},
		{"default", "", false},
		{"../x", "", false},
		{"fr-CA-x-y-z", "", false},
	} {
		got, ok := NormalizeLocale(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeLocale(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestChain(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", []string{"default"}},
		{"bad locale", []string{"default"}},
		{"fr", []string{"default", "fr"}},
		{"fr_ca", []string{"default", "fr", "fr-CA"}},
	} {
		if got := Chain(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Chain(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

const schema = `{"type":"object","properties":{
	"subject":{"type":"string","maxLength":20,"default":"Welcome"},
	"count":{"type":"integer","minimum":1,"default":1},
	"show":{"type":"boolean","default":true}}}`

func TestCompileRefuses(t *testing.T) {
	for _, tt := range []struct{ schema, want string }{
		{`[]`, "must be a JSON object"},
		{`{"type":"string"}`, `must be of "type": "object"`},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `property "a" has no default`},
		{`{"type":"object","properties":{"a":1}}`, `property "a" is not a schema object`},
		{`{"type":"object","properties":{"a":{"type":"string","default":3}}}`, "the defaults do not fit the schema: a"},
	} {
		_, err := Compile(json.RawMessage(tt.schema))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%s) = %v, want %q", tt.schema, err, tt.want)
		}
	}
}

func raw(m map[string]any) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range m {
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}

func TestResolve(t *testing.T) {
	cs, err := Compile(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		layers []map[string]json.RawMessage
		want   map[string]any
	}{
		{"defaults", nil, map[string]any{"subject": "Welcome", "count": 1, "show": true}},
		{"layers in order", []map[string]json.RawMessage{
			raw(map[string]any{"subject": "Hi", "count": 2}),
			raw(map[string]any{"subject": "Salut"}),
			raw(map[string]any{"count": 3}),
		}, map[string]any{"subject": "Salut", "count": 3, "show": true}},
		{"a refused value is skipped, field by field", []map[string]json.RawMessage{
			raw(map[string]any{"subject": "Hi", "count": 2}),
			raw(map[string]any{"subject": strings.Repeat("x", 30), "count": 0, "show": false}),
		}, map[string]any{"subject": "Hi", "count": 2, "show": false}},
		{"a value of a field the schema lost is skipped", []map[string]json.RawMessage{
			raw(map[string]any{"gone": "x", "subject": 7}),
		}, map[string]any{"subject": "Welcome", "count": 1, "show": true}},
	} {
		got := cs.Resolve(tt.layers...)
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(tt.want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: %s, want %s", tt.name, gotJSON, wantJSON)
		}
	}
}

func TestRefused(t *testing.T) {
	cs, err := Compile(json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"string","default":"x"},"b":{"type":"integer","default":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.Refused(raw(map[string]any{"b": "no"})); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Refused = %v, want [a b]", got)
	}
	if got := cs.Refused(raw(map[string]any{"a": "y", "b": 2})); len(got) != 0 {
		t.Errorf("Refused = %v, want none", got)
	}
}

func TestSkipped(t *testing.T) {
	cs, err := Compile(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	got := cs.Skipped(raw(map[string]any{"subject": strings.Repeat("x", 21), "count": 2, "gone": 1}))
	if !reflect.DeepEqual(got, []string{"gone", "subject"}) {
		t.Errorf("Skipped = %v, want [gone subject]", got)
	}
	if got := cs.Skipped(raw(map[string]any{"subject": "ok"})); len(got) != 0 {
		t.Errorf("Skipped = %v, want none", got)
	}
}
