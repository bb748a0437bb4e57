package preferences_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/preferences"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseClock(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want preferences.Clock
		ok   bool
	}{
		{"00:00", 0, true}, {"09:05", 545, true}, {"23:59", 1439, true},
		{"24:00", 0, false}, {"12:60", 0, false}, {"9:00", 0, false}, {"09:00:00", 0, false},
		{"", 0, false}, {"ab:cd", 0, false}, {"-1:00", 0, false}, {"09-00", 0, false},
	} {
		got, err := preferences.ParseClock(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("ParseClock(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestQuietHoursContains(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	night := preferences.QuietHours{Start: "22:00", End: "07:30"}
	lunch := preferences.QuietHours{Start: "12:00", End: "13:00"}
	for _, tc := range []struct {
		name string
		q    preferences.QuietHours
		t    string
		loc  *time.Location
		want bool
	}{
		{"before a night window", night, "2026-06-01T21:59:59Z", time.UTC, false},
		{"at a night window's start", night, "2026-06-01T22:00:00Z", time.UTC, true},
		{"at midnight", night, "2026-06-02T00:00:00Z", time.UTC, true},
		{"just before its end", night, "2026-06-02T07:29:59.999Z", time.UTC, true},
		{"at its end", night, "2026-06-02T07:30:00Z", time.UTC, false},
		{"midday", night, "2026-06-02T12:00:00Z", time.UTC, false},
		{"a day window", lunch, "2026-06-02T12:30:00Z", time.UTC, true},
		{"after a day window", lunch, "2026-06-02T13:00:00Z", time.UTC, false},
		{"before a day window", lunch, "2026-06-02T11:59:00Z", time.UTC, false},
		// 20:30Z is 22:30 in Paris in summer (UTC+2): inside.
		{"read in the zone", night, "2026-06-01T20:30:00Z", paris, true},
		{"read in UTC", night, "2026-06-01T20:30:00Z", time.UTC, false},
		{"a window that does not parse", preferences.QuietHours{Start: "25:00", End: "07:00"}, "2026-06-02T03:00:00Z", time.UTC, false},
		{"an empty window", preferences.QuietHours{Start: "07:00", End: "07:00"}, "2026-06-02T07:00:00Z", time.UTC, false},
	} {
		if got := tc.q.Contains(at(t, tc.t), tc.loc); got != tc.want {
			t.Errorf("%s: Contains(%s) = %v, want %v", tc.name, tc.t, got, tc.want)
		}
	}
}

func TestNextLocal(t *testing.T) {
	paris, ny := zone(t, "Europe/Paris"), zone(t, "America/New_York")
	nine, _ := preferences.ParseClock("09:00")
	half2, _ := preferences.ParseClock("02:30")
	half1, _ := preferences.ParseClock("01:30")
	for _, tc := range []struct {
		name  string
		after string
		c     preferences.Clock
		loc   *time.Location
		want  string
	}{
		{"later the same day", "2026-06-01T06:00:00Z", nine, time.UTC, "2026-06-01T09:00:00Z"},
		{"at the instant: the next day", "2026-06-01T09:00:00Z", nine, time.UTC, "2026-06-02T09:00:00Z"},
		{"past it: the next day", "2026-06-01T09:00:01Z", nine, time.UTC, "2026-06-02T09:00:00Z"},
		{"in a zone, summer", "2026-06-01T06:00:00Z", nine, paris, "2026-06-01T07:00:00Z"},
		{"in a zone, winter", "2026-01-10T06:00:00Z", nine, paris, "2026-01-10T08:00:00Z"},
		{"across the year's end", "2026-12-31T23:00:00Z", nine, paris, "2027-01-01T08:00:00Z"},
		// The night of 28 to 29 March 2026 Paris moves from UTC+1 to UTC+2:
		// 09:00 local is 08:00Z on the 28th and 07:00Z on the 29th, a
		// calendar day and 23 hours apart.
		{"across spring forward", "2026-03-28T08:00:00Z", nine, paris, "2026-03-29T07:00:00Z"},
		// 25 October 2026: back from UTC+2 to UTC+1, a day of 25 hours.
		{"across fall back", "2026-10-24T07:00:00Z", nine, paris, "2026-10-25T08:00:00Z"},
		// 02:30 does not exist on 29 March in Paris (02:00 jumps to
		// 03:00): it reads 03:30 CEST, 01:30Z.
		{"a skipped clock time", "2026-03-29T00:00:00Z", half2, paris, "2026-03-29T01:30:00Z"},
		// 02:30 happens twice on 25 October: the first one, CEST, 00:30Z.
		{"a clock time read twice", "2026-10-24T23:00:00Z", half2, paris, "2026-10-25T00:30:00Z"},
		// After the first reading, the second one (CET, 01:30Z) is the next.
		{"the second reading", "2026-10-25T00:30:00Z", half2, paris, "2026-10-25T01:30:00Z"},
		{"read twice in New York", "2026-11-01T04:00:00Z", half1, ny, "2026-11-01T05:30:00Z"},
	} {
		got := preferences.NextLocal(at(t, tc.after), tc.c, tc.loc)
		if !got.Equal(at(t, tc.want)) {
			t.Errorf("%s: NextLocal(%s, %d) = %s, want %s", tc.name, tc.after, tc.c, got.UTC().Format(time.RFC3339), tc.want)
		}
	}
}

func TestQuietHoursEndAfter(t *testing.T) {
	paris := zone(t, "Europe/Paris")
	night := preferences.QuietHours{Start: "22:00", End: "07:30"}
	for _, tc := range []struct {
		name, t string
		loc     *time.Location
		want    string
	}{
		{"before midnight", "2026-06-01T23:00:00Z", time.UTC, "2026-06-02T07:30:00Z"},
		{"after midnight", "2026-06-02T01:00:00Z", time.UTC, "2026-06-02T07:30:00Z"},
		{"in a zone", "2026-06-01T21:00:00Z", paris, "2026-06-02T05:30:00Z"},
		// The window of the night of 24 to 25 October (fall back) ends at
		// 07:30 CET, 06:30Z.
		{"across fall back", "2026-10-24T21:00:00Z", paris, "2026-10-25T06:30:00Z"},
	} {
		got := night.EndAfter(at(t, tc.t), tc.loc)
		if !got.Equal(at(t, tc.want)) {
			t.Errorf("%s: EndAfter(%s) = %s, want %s", tc.name, tc.t, got.UTC().Format(time.RFC3339), tc.want)
		}
	}
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
