package preferences_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/preferences"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestQuietHold(t *testing.T) {
	night := &preferences.QuietHours{Start: "22:00", End: "07:30"}
	no := false
	inside, outside := at(t, "2026-06-01T23:00:00Z"), at(t, "2026-06-01T12:00:00Z")
	end := at(t, "2026-06-02T07:30:00Z")
	for _, tc := range []struct {
		name string
		doc  preferences.Doc
		def  preferences.Defaults
		tz   string
		now  time.Time
		want time.Time
	}{
		{"no quiet hours", preferences.Doc{}, preferences.Defaults{}, "", inside, time.Time{}},
		{"inside", preferences.Doc{QuietHours: night}, preferences.Defaults{}, "", inside, end},
		{"outside", preferences.Doc{QuietHours: night}, preferences.Defaults{}, "", outside, time.Time{}},
		{"a window that does not parse", preferences.Doc{QuietHours: &preferences.QuietHours{Start: "25:00", End: "07:00"}},
			preferences.Defaults{}, "", inside, time.Time{}},
		{"a window whose ends are equal", preferences.Doc{QuietHours: &preferences.QuietHours{Start: "23:00", End: "23:00"}},
			preferences.Defaults{}, "", inside, time.Time{}},
		{"critical", preferences.Doc{QuietHours: night}, preferences.Defaults{Critical: true}, "", inside, time.Time{}},
		{"skipped anyway", preferences.Doc{QuietHours: night, Channels: map[string]bool{"email": false}},
			preferences.Defaults{}, "", inside, time.Time{}},
		{"workflow off", preferences.Doc{QuietHours: night, Workflows: map[string]preferences.Workflow{"w": {Enabled: &no}}},
			preferences.Defaults{}, "", inside, time.Time{}},
		// 23:00Z is 08:00 in Tokyo: outside its night.
		{"the subscriber's zone", preferences.Doc{QuietHours: night}, preferences.Defaults{}, "Asia/Tokyo", inside, time.Time{}},
		// 14:00Z is 23:00 in Tokyo; the window ends at 07:30 JST, 22:30Z.
		{"inside in its zone", preferences.Doc{QuietHours: night}, preferences.Defaults{}, "Asia/Tokyo",
			at(t, "2026-06-01T14:00:00Z"), at(t, "2026-06-01T22:30:00Z")},
	} {
		h := preferences.QuietHold(tc.doc, "w", tc.def, "email", tc.tz, tc.now)
		if !h.Until.Equal(tc.want) || h.Held() != !tc.want.IsZero() {
			t.Errorf("%s: QuietHold = %+v, want until %s", tc.name, h, tc.want)
		}
		if h.Held() && (h.Window == nil || *h.Window != *night || h.Timezone != tc.tz) {
			t.Errorf("%s: the hold does not say its window and zone: %+v", tc.name, h)
		}
	}
}

func TestPatchQuietHours(t *testing.T) {
	start := preferences.Doc{Channels: map[string]bool{"sms": false}}
	set, p := preferences.Patch(start, json.RawMessage(`{"quietHours":{"start":"22:00","end":"07:30"}}`))
	if len(p) > 0 {
		t.Fatal(p)
	}
	if set.QuietHours == nil || *set.QuietHours != (preferences.QuietHours{Start: "22:00", End: "07:30"}) || set.Channels["sms"] {
		t.Fatalf("after the set: %+v", set)
	}
	if start.QuietHours != nil {
		t.Fatal("Patch changed its input")
	}
	if raw, _ := json.Marshal(set); string(raw) != `{"channels":{"sms":false},"workflows":{},"quietHours":{"start":"22:00","end":"07:30"}}` {
		t.Fatalf("shown as %s", raw)
	}
	kept, p := preferences.Patch(set, json.RawMessage(`{"channels":{"email":true}}`))
	if len(p) > 0 || !preferences.Equal(kept, func() preferences.Doc { d := set.Clone(); d.Channels["email"] = true; return d }()) {
		t.Fatalf("an unrelated patch: %+v %v", kept, p)
	}
	removed, p := preferences.Patch(set, json.RawMessage(`{"quietHours":null}`))
	if len(p) > 0 || removed.QuietHours != nil || preferences.Equal(removed, set) {
		t.Fatalf("after null: %+v %v", removed, p)
	}
	if only, _ := preferences.Patch(preferences.Doc{}, json.RawMessage(`{"quietHours":{"start":"01:00","end":"02:00"}}`)); only.Empty() {
		t.Fatal("a document with quiet hours only is empty")
	}
	for body, fields := range map[string][]string{
		`{"quietHours":true}`:                                  {"quietHours"},
		`{"quietHours":{"start":"22:00"}}`:                     {"quietHours.end"},
		`{"quietHours":{}}`:                                    {"quietHours.start", "quietHours.end"},
		`{"quietHours":{"start":"24:00","end":"7:30"}}`:        {"quietHours.end", "quietHours.start"},
		`{"quietHours":{"start":"08:00","end":"08:00"}}`:       {"quietHours"},
		`{"quietHours":{"start":1,"end":"08:00"}}`:             {"quietHours.start"},
		`{"quietHours":{"start":"01:00","end":"08:00","x":1}}`: {"quietHours.x"},
		`{"quietHours":{"start":"01:00","end":"08:00"},"y":1}`: {"y"},
	} {
		doc, p := preferences.Patch(set, json.RawMessage(body))
		if len(p) != len(fields) || doc.QuietHours != nil {
			t.Errorf("%s: problems %v, doc %+v; want %v", body, p, doc, fields)
			continue
		}
		for i, f := range fields {
			if p[i].Field != f {
				t.Errorf("%s: problem %d names %q, want %q", body, i, p[i].Field, f)
			}
		}
	}
}
