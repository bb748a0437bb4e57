package bridgeclient

import (
	"strings"
	"testing"
)

// The 200 answer of a check: completed, or a step named by its id and
// type alone; anything else is not a check answer.
func TestCheckAnswer(t *testing.T) {
	for _, tc := range []struct {
		body     string
		kind     OutcomeKind
		stepID   string
		stepType string
	}{
		{`{"status":"completed"}`, OutcomeCompleted, "", ""},
		{`{"status":"step","step":{"stepId":"a","type":"run"}}`, OutcomeStep, "a", "run"},
		{`{"status":"step","step":{"stepId":"s","type":"send","channel":"email"}}`, OutcomeStep, "s", "send"},
		{`{"status":"step"}`, OutcomeTerminal, "", ""},
		{`{"status":"step","step":{"stepId":"","type":"run"}}`, OutcomeTerminal, "", ""},
		{`{"status":"step","step":{"stepId":"` + strings.Repeat("a", MaxIDChars+1) + `","type":"run"}}`, OutcomeTerminal, "", ""},
		{`{"status":"ok"}`, OutcomeTerminal, "", ""},
		{`[]`, OutcomeRetryable, "", ""},
	} {
		o := checkAnswer([]byte(tc.body))
		if o.Kind != tc.kind {
			t.Errorf("%.60s: kind %v, want %v", tc.body, o.Kind, tc.kind)
			continue
		}
		if tc.kind == OutcomeStep && (o.Step.StepID != tc.stepID || string(o.Step.Type) != tc.stepType || o.Step.Channel != "") {
			t.Errorf("%s: step %+v", tc.body, o.Step)
		}
	}
}
