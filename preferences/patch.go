package preferences

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/localtime"
)

// Patch merges body, a PATCH body of CONTRACT §11, into cur and returns
// the result; cur is not changed. body has the shape of a [Doc]: a
// boolean sets its key, null removes it (and its children), an object
// merges into its key. "channels": null removes every global switch,
// "workflows": {"W": null} removes workflow W, "workflows": null every
// workflow. A workflow left with nothing set is removed.
//
// Problems name each bad field by its dotted path: an unknown field, a
// key that is not a kind or a workflow id, a value that is neither a
// boolean (an object where the shape has one) nor null, and a result
// naming more than MaxWorkflows workflows. With problems, the Doc is the
// zero value.
func Patch(cur Doc, body json.RawMessage) (Doc, apierr.Problems) {
	var p apierr.Problems
	top, ok := object(body)
	if !ok {
		p.Add("body", "must be a JSON object")
		return Doc{}, p
	}
	next := cur.Clone()
	for _, k := range sortedKeys(top) {
		raw := top[k]
		switch k {
		case "channels":
			if isNull(raw) {
				next.Channels = map[string]bool{}
				continue
			}
			patchSwitches(&p, "channels", next.Channels, raw)
		case "workflows":
			if isNull(raw) {
				next.Workflows = map[string]Workflow{}
				continue
			}
			patchWorkflows(&p, next.Workflows, raw)
		case "quietHours":
			if isNull(raw) {
				next.QuietHours = nil
				continue
			}
			if q, ok := patchQuietHours(&p, raw); ok {
				next.QuietHours = &q
			}
		default:
			p.Add(clip(k), "is not a known field")
		}
	}
	if len(next.Workflows) > MaxWorkflows {
		p.Add("workflows", "would name %d workflows; at most %d are allowed", len(next.Workflows), MaxWorkflows)
	}
	if len(p) > 0 {
		return Doc{}, p
	}
	return next, nil
}

// patchQuietHours reads raw, the value of "quietHours": an object of
// exactly "start" and "end", each "HH:MM", different. It is a whole
// value, not merged: a window is its two ends.
func patchQuietHours(p *apierr.Problems, raw json.RawMessage) (QuietHours, bool) {
	obj, ok := object(raw)
	if !ok {
		p.Add("quietHours", "must be an object {\"start\":\"HH:MM\",\"end\":\"HH:MM\"} or null")
		return QuietHours{}, false
	}
	var q QuietHours
	n := len(*p)
	for _, k := range sortedKeys(obj) {
		var v string
		switch k {
		case "start", "end":
			if json.Unmarshal(obj[k], &v) != nil {
				p.Add("quietHours."+k, "must be a time of day \"HH:MM\"")
				continue
			}
			if _, err := localtime.ParseClock(v); err != nil {
				p.Add("quietHours."+k, "must be a time of day \"HH:MM\", 00:00 to 23:59")
				continue
			}
			if k == "start" {
				q.Start = v
			} else {
				q.End = v
			}
		default:
			p.Add("quietHours."+clip(k), "is not a known field")
		}
	}
	for _, k := range []string{"start", "end"} {
		if _, given := obj[k]; !given {
			p.Add("quietHours."+k, "is required")
		}
	}
	if len(*p) > n {
		return QuietHours{}, false
	}
	if q.Start == q.End {
		p.Add("quietHours", "must end at another time than it starts")
		return QuietHours{}, false
	}
	return q, true
}

// patchWorkflows merges raw, the value of "workflows", into ws.
func patchWorkflows(p *apierr.Problems, ws map[string]Workflow, raw json.RawMessage) {
	obj, ok := object(raw)
	if !ok {
		p.Add("workflows", "must be an object or null")
		return
	}
	for _, id := range sortedKeys(obj) {
		field := "workflows." + clip(id)
		if !ValidWorkflowID(id) {
			p.Add(field, "is not a workflow id: ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$, at most %d characters", MaxWorkflowIDChars)
			continue
		}
		if isNull(obj[id]) {
			delete(ws, id)
			continue
		}
		wobj, ok := object(obj[id])
		if !ok {
			p.Add(field, "must be an object or null")
			continue
		}
		w := ws[id]
		w.Channels = maps.Clone(w.Channels)
		if w.Channels == nil {
			w.Channels = map[string]bool{}
		}
		for _, k := range sortedKeys(wobj) {
			raw := wobj[k]
			switch k {
			case "enabled":
				if isNull(raw) {
					w.Enabled = nil
					continue
				}
				var v bool
				if json.Unmarshal(raw, &v) != nil {
					p.Add(field+".enabled", "must be a boolean or null")
					continue
				}
				w.Enabled = &v
			case "channels":
				if isNull(raw) {
					w.Channels = map[string]bool{}
					continue
				}
				patchSwitches(p, field+".channels", w.Channels, raw)
			default:
				p.Add(field+"."+clip(k), "is not a known field")
			}
		}
		if len(w.Channels) == 0 {
			w.Channels = nil
		}
		if w.empty() {
			delete(ws, id)
		} else {
			ws[id] = w
		}
	}
}

// patchSwitches merges raw, an object of kind → boolean or null, into m.
func patchSwitches(p *apierr.Problems, field string, m map[string]bool, raw json.RawMessage) {
	obj, ok := object(raw)
	if !ok {
		p.Add(field, "must be an object or null")
		return
	}
	for _, k := range sortedKeys(obj) {
		kf := field + "." + clip(k)
		if !IsKind(k) {
			p.Add(kf, "is not a channel kind: one of %s", strings.Join(Kinds, ", "))
			continue
		}
		if isNull(obj[k]) {
			delete(m, k)
			continue
		}
		var v bool
		if json.Unmarshal(obj[k], &v) != nil {
			p.Add(kf, "must be a boolean or null")
			continue
		}
		m[k] = v
	}
}

// ParseDefaults validates a workflow's default switches as a Bridge
// declares them (kind → boolean); problems are named under field.
func ParseDefaults(field string, channels map[string]bool) apierr.Problems {
	var p apierr.Problems
	for _, k := range slices.Sorted(maps.Keys(channels)) {
		if !IsKind(k) {
			p.Add(field+"."+clip(k), "is not a channel kind: one of %s", strings.Join(Kinds, ", "))
		}
	}
	return p
}

// object decodes raw as a JSON object; false when it is not one.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// clip bounds a key quoted in a problem's field name.
func clip(s string) string {
	if len(s) > MaxWorkflowIDChars {
		return s[:MaxWorkflowIDChars] + "…"
	}
	return s
}
