package preferences

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// tri is a switch that may be unset.
type tri int

const (
	unset tri = iota
	on
	off
)

func (t tri) String() string { return [...]string{"unset", "true", "false"}[t] }

func (t tri) ptr() *bool {
	if t == unset {
		return nil
	}
	v := t == on
	return &v
}

func (t tri) put(m map[string]bool, k string) map[string]bool {
	if t != unset {
		if m == nil {
			m = map[string]bool{}
		}
		m[k] = t == on
	}
	return m
}

// TestAllowsEveryCombination checks the resolution order of CONTRACT §11
// against a formula written independently of Allows: sends unless not
// critical and (the workflow is off, or the highest-priority switch that
// is set says off).
func TestAllowsEveryCombination(t *testing.T) {
	all := []tri{unset, on, off}
	n := 0
	for _, wfChannel := range all {
		for _, wfEnabled := range all {
			for _, global := range all {
				for _, def := range all {
					for _, critical := range []bool{false, true} {
						n++
						d := Doc{Channels: global.put(nil, "email"), Workflows: map[string]Workflow{}}
						if w := (Workflow{Enabled: wfEnabled.ptr(), Channels: wfChannel.put(nil, "email")}); !w.empty() {
							d.Workflows["digest"] = w
						}
						defs := Defaults{Critical: critical, Channels: def.put(nil, "email")}

						decider := def
						if global != unset {
							decider = global
						}
						if wfChannel != unset {
							decider = wfChannel
						}
						want := critical || (wfEnabled != off && decider != off)

						name := fmt.Sprintf("wfChannel=%v/wfEnabled=%v/global=%v/default=%v/critical=%v",
							wfChannel, wfEnabled, global, def, critical)
						if got := Allows(d, "digest", defs, "email"); got != want {
							t.Errorf("%s: Allows = %v, want %v", name, got, want)
						}
						// Another kind and another workflow see none of it
						// but the global switch of their own kind.
						if !Allows(d, "digest", defs, "sms") && !critical && wfEnabled != off {
							t.Errorf("%s: an sms send was skipped", name)
						}
						if got, want := Allows(d, "other", Defaults{}, "email"), global != off; got != want {
							t.Errorf("%s: another workflow: Allows = %v, want %v", name, got, want)
						}
					}
				}
			}
		}
	}
	if n != 162 {
		t.Fatalf("%d combinations, want 3^4*2", n)
	}
}

func TestPatchMerges(t *testing.T) {
	tr := true
	cur := Doc{Channels: map[string]bool{"email": true, "sms": false},
		Workflows: map[string]Workflow{
			"digest": {Enabled: &tr, Channels: map[string]bool{"email": false, "push": true}},
			"alerts": {Channels: map[string]bool{"sms": true}},
		}}
	for _, tc := range []struct{ name, body, want string }{
		{"empty body changes nothing", `{}`,
			`{"channels":{"email":true,"sms":false},"workflows":{"alerts":{"channels":{"sms":true}},"digest":{"enabled":true,"channels":{"email":false,"push":true}}}}`},
		{"a value sets, null removes a leaf", `{"channels":{"email":null,"chat":false},"workflows":{"digest":{"channels":{"push":null}}}}`,
			`{"channels":{"chat":false,"sms":false},"workflows":{"alerts":{"channels":{"sms":true}},"digest":{"enabled":true,"channels":{"email":false}}}}`},
		{"null removes a workflow", `{"workflows":{"digest":null}}`,
			`{"channels":{"email":true,"sms":false},"workflows":{"alerts":{"channels":{"sms":true}}}}`},
		{"null removes a level", `{"channels":null,"workflows":{"digest":{"channels":null}}}`,
			`{"channels":{},"workflows":{"alerts":{"channels":{"sms":true}},"digest":{"enabled":true}}}`},
		{"a workflow left empty goes", `{"workflows":{"alerts":{"channels":{"sms":null}},"digest":{"enabled":null,"channels":null}}}`,
			`{"channels":{"email":true,"sms":false},"workflows":{}}`},
		{"null removes every workflow", `{"workflows":null}`,
			`{"channels":{"email":true,"sms":false},"workflows":{}}`},
		{"enabled sets", `{"workflows":{"new_one":{"enabled":false}}}`,
			`{"channels":{"email":true,"sms":false},"workflows":{"alerts":{"channels":{"sms":true}},"digest":{"enabled":true,"channels":{"email":false,"push":true}},"new_one":{"enabled":false}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(cur)
			got, p := Patch(cur, json.RawMessage(tc.body))
			if len(p) > 0 {
				t.Fatalf("problems: %v", p)
			}
			if b, _ := json.Marshal(got); string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			if after, _ := json.Marshal(cur); string(after) != string(before) {
				t.Errorf("Patch changed its input: %s", after)
			}
		})
	}
}

func TestPatchProblems(t *testing.T) {
	long := strings.Repeat("w", MaxWorkflowIDChars+1)
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"not an object", `[]`, []string{"body"}},
		{"unknown top field", `{"channels":{},"colour":1}`, []string{"colour"}},
		{"unknown kind and non-boolean", `{"channels":{"fax":true,"email":"no","sms":1}}`,
			[]string{"channels.email", "channels.fax", "channels.sms"}},
		{"workflow problems", `{"workflows":{"1bad":{},"ok":{"enabled":"yes","channels":{"pager":false},"mute":true},"` + long + `":null}}`,
			[]string{"workflows.1bad", "workflows.ok.channels.pager", "workflows.ok.enabled", "workflows.ok.mute", "workflows." + long[:MaxWorkflowIDChars] + "…"}},
		{"shapes", `{"channels":true,"workflows":{"w":[]}}`, []string{"channels", "workflows.w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p := Patch(Doc{}, json.RawMessage(tc.body))
			if !got.Empty() {
				t.Errorf("a refused patch returned %+v", got)
			}
			var fields []string
			for _, fp := range p {
				fields = append(fields, fp.Field)
			}
			if !slices.Equal(slices.Sorted(slices.Values(fields)), slices.Sorted(slices.Values(tc.fields))) {
				t.Errorf("fields %q, want %q", fields, tc.fields)
			}
		})
	}
}

func TestPatchBoundsWorkflows(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"workflows":{`)
	for i := range MaxWorkflows + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"w%d":{"enabled":false}`, i)
	}
	b.WriteString(`}}`)
	_, p := Patch(Doc{}, json.RawMessage(b.String()))
	if len(p) != 1 || p[0].Field != "workflows" {
		t.Fatalf("problems %v, want one on workflows", p)
	}
	// At the bound it is accepted.
	full, p := Patch(Doc{}, json.RawMessage(strings.Replace(b.String(), fmt.Sprintf(`,"w%d":{"enabled":false}`, MaxWorkflows), "", 1)))
	if len(p) != 0 || len(full.Workflows) != MaxWorkflows {
		t.Fatalf("at the bound: %d workflows, problems %v", len(full.Workflows), p)
	}
}

func TestParseDefaults(t *testing.T) {
	if p := ParseDefaults("workflows[0].preferences.channels", map[string]bool{"email": false, "in_app": true}); len(p) != 0 {
		t.Fatalf("valid defaults refused: %v", p)
	}
	p := ParseDefaults("workflows[0].preferences.channels", map[string]bool{"fax": false})
	if len(p) != 1 || p[0].Field != "workflows[0].preferences.channels.fax" {
		t.Fatalf("problems %v", p)
	}
}

// TestPagePatch: submitting the page makes every box's effective value
// what was submitted, writes only the boxes that changed, leaves critical
// workflows alone and enables a disabled workflow that gets a box on.
func TestPagePatch(t *testing.T) {
	f := false
	d := Doc{Channels: map[string]bool{"sms": false}, Workflows: map[string]Workflow{"muted": {Enabled: &f}}}
	listed := []Listed{
		{WorkflowID: "digest"},
		{WorkflowID: "promo", Defaults: Defaults{Channels: map[string]bool{"email": false}}},
		{WorkflowID: "reset", Defaults: Defaults{Critical: true}},
		{WorkflowID: "muted"},
	}
	kinds := []string{"email", "sms"}
	on := map[Toggle]bool{
		{"digest", "email"}: false, // was on: turned off
		{"digest", "sms"}:   false, // off by the global switch: untouched
		{"promo", "email"}:  true,  // off by default: turned on
		{"promo", "sms"}:    true,  // off globally: turned on
		{"muted", "email"}:  true,  // a disabled workflow with a box on
	}
	body := PagePatch(d, listed, kinds, on)
	want := `{"workflows":{"digest":{"channels":{"email":false}},"muted":{"enabled":null},"promo":{"channels":{"email":true,"sms":true}}}}`
	if string(body) != want {
		t.Fatalf("patch %s\nwant  %s", body, want)
	}
	next, p := Patch(d, body)
	if len(p) > 0 {
		t.Fatal(p)
	}
	for _, l := range listed {
		for _, k := range kinds {
			if got, want := Allows(next, l.WorkflowID, l.Defaults, k), l.Defaults.Critical || on[Toggle{l.WorkflowID, k}]; got != want {
				t.Errorf("%s/%s: Allows %v after the submit, want %v", l.WorkflowID, k, got, want)
			}
		}
	}
	if again := PagePatch(next, listed, kinds, on); string(again) != `{"workflows":{}}` {
		t.Errorf("the same submit again writes %s", again)
	}
}
