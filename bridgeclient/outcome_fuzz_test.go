package bridgeclient

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzOutcome feeds arbitrary statuses and bodies to the parser of execute
// answers and checks it never panics, always classifies, and lets through
// only steps within the bounds the engine relies on.
//
//	go test -run='^$' -fuzz=FuzzOutcome -fuzztime=30s ./bridgeclient
func FuzzOutcome(f *testing.F) {
	long := strings.Repeat("x", MaxIDChars+1) // small seeds keep the fuzzer fast
	for _, seed := range []struct {
		status int
		body   string
	}{
		{200, `{"status":"completed"}`},
		{200, `{"status":"step","step":{"stepId":"a","type":"run","output":{"n":1}}}`},
		{200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","to":"u2","content":{"subject":"s","body":"b"}}}`},
		{200, `{"status":"step","step":{"stepId":"d","type":"delay","seconds":30}}`},
		{200, `{"status":"step","step":{"stepId":"d","type":"delay","until":"2025-01-01T00:00:00Z"}}`},
		{200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"approved","timeout":"1h"}}`},
		{200, `{"status":"step","step":{"stepId":"g","type":"digest","window":600,"key":"k"}}`},
		{200, `{"status":"step","step":{"stepId":"g","type":"digest","window":"10m","key":"` + long + `"}}`},
		{200, `{"status":"step","step":{"stepId":"` + long + `","type":"run"}}`},
		{200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"` + long + `"}}`},
		{200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"` + long + `","content":{"body":""}}}`},
		{200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","to":"` + long + `","content":{"body":""}}}`},
		{200, `{"status":"step","step":{"stepId":"x","type":"teleport"}}`},
		{200, `{"status":"step"}`},
		{200, `<html>`},
		{500, `{"error":{"message":"boom","stepId":"a"}}`},
		{500, `{"error":{"message":"boom","stepId":"` + long + `"}}`},
		{422, `{"error":{"code":"nondeterministic","message":"moved"}}`},
		{401, ``},
		{302, ``},
	} {
		f.Add(seed.status, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		o := outcomeOf(status, body)
		switch o.Kind {
		case OutcomeCompleted:
			if o.Step != nil || o.Code != "" {
				t.Fatalf("completed with %+v", o)
			}
		case OutcomeStep:
			if status != http.StatusOK || o.Step == nil || o.Code != "" {
				t.Fatalf("step outcome %+v for status %d", o, status)
			}
			s := o.Step
			if s.StepID == "" || check(s) != nil || bounds(s) != nil {
				t.Fatalf("step %+v let through", s)
			}
			for _, v := range []string{s.StepID, s.Event, s.Channel, string(s.Type)} {
				if utf8.RuneCountInString(v) > MaxIDChars {
					t.Fatalf("a field of %d characters let through", utf8.RuneCountInString(v))
				}
			}
			for _, v := range []*string{s.To, s.Key} {
				if v != nil && utf8.RuneCountInString(*v) > MaxIDChars {
					t.Fatalf("a field of %d characters let through", utf8.RuneCountInString(*v))
				}
			}
			if len(s.Output) > MaxOutputBytes {
				t.Fatalf("an output of %d bytes let through", len(s.Output))
			}
		case OutcomeRetryable, OutcomeTerminal:
			if o.Step != nil || o.Code == "" || o.Message == "" {
				t.Fatalf("failure without a code or message: %+v", o)
			}
			if !codePattern.MatchString(o.Code) {
				t.Fatalf("code %q", o.Code)
			}
			if !validID(o.StepID) {
				t.Fatalf("a failed stepId of %d bytes let through", len(o.StepID))
			}
		default:
			t.Fatalf("unclassified: %+v", o)
		}
		if len(o.Message) > 1024+len("…") || !utf8.ValidString(o.Message) {
			t.Fatalf("message of %d bytes, valid UTF-8 %v", len(o.Message), utf8.ValidString(o.Message))
		}
	})
}
