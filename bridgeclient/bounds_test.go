package bridgeclient_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridgeclient"
)

// Every string a Bridge supplies in an answer, 10 KB long, and every
// oversized output, content or answer fails the run terminally with
// invalid_step; values at their bound pass.
func TestClientBoundsFailTerminally(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	atBound := strings.Repeat("é", bridgeclient.MaxIDChars) // characters, not bytes
	big := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{"run stepId", 200, `{"status":"step","step":{"stepId":"` + long + `","type":"run","output":1}}`},
		{"delay stepId", 200, `{"status":"step","step":{"stepId":"` + long + `","type":"delay","seconds":1}}`},
		{"type", 200, `{"status":"step","step":{"stepId":"a","type":"` + long + `"}}`},
		{"waitForEvent event", 200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"` + long + `"}}`},
		{"send channel", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"` + long + `","content":{"body":"b"}}}`},
		{"send to", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","to":"` + long + `","content":{"body":"b"}}}`},
		{"digest key", 200, `{"status":"step","step":{"stepId":"g","type":"digest","window":"10m","key":"` + long + `"}}`},
		{"throttle key", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":1,"window":60,"key":"` + long + `"}}`},
		{"run output over 1 MiB", 200, `{"status":"step","step":{"stepId":"a","type":"run","output":` + big(bridgeclient.MaxOutputBytes) + `}}`},
		{"send content over 256 KiB", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","content":{"body":` + big(bridgeclient.MaxContentBytes) + `}}}`},
		{"answer over 2 MiB", 200, `{"status":"step","step":{"stepId":"a","type":"run","output":` + big(5<<20) + `}}`},
		{"digest window", 200, `{"status":"step","step":{"stepId":"g","type":"digest","window":"` + long + `"}}`},
		{"wait timeout", 200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"e","timeout":"` + long + `"}}`},
		{"delay until", 200, `{"status":"step","step":{"stepId":"d","type":"delay","until":"` + long + `"}}`},
		{"delay seconds", 200, `{"status":"step","step":{"stepId":"d","type":"delay","seconds":1` + strings.Repeat("0", 10_000) + `}}`},
		{"status", 200, `{"status":"` + long + `"}`},
		{"throttle limit 0", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":0,"window":60}}`},
		{"throttle limit negative", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":-3,"window":60}}`},
		{"throttle without limit", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","window":60}}`},
		{"throttle without window", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":3}}`},
		{"throttle window 0", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":3,"window":0}}`},
		{"throttle window over 31 days", 200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":3,"window":"745h"}}`},
		{"500 stepId", 500, `{"error":{"message":"boom","stepId":"` + long + `"}}`},
	}
	var c bridgeclient.Client
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := execute(t, &c, tt.status, tt.body)
			if o.Kind != bridgeclient.OutcomeTerminal || o.Code != apierr.CodeInvalidStep || o.Step != nil || len(o.Message) > 1100 {
				t.Fatalf("got kind %v code %q step %v message %.200q", o.Kind, o.Code, o.Step, o.Message)
			}
		})
	}

	ok := []struct{ name, body string }{
		{"ids at their bound", `{"status":"step","step":{"stepId":"` + atBound + `","type":"send","channel":"` + atBound +
			`","to":"` + atBound + `","content":{"body":"b"}}}`},
		{"key at its bound", `{"status":"step","step":{"stepId":"g","type":"digest","window":"10m","key":"` + atBound + `"}}`},
		{"throttle at its bounds", `{"status":"step","step":{"stepId":"t","type":"throttle","limit":1,"window":"744h","key":"` + atBound + `"}}`},
		{"throttle of 1 h without key", `{"status":"step","step":{"stepId":"t","type":"throttle","limit":3,"window":3600,"key":null}}`},
		{"output at its bound", `{"status":"step","step":{"stepId":"a","type":"run","output":` + big(bridgeclient.MaxOutputBytes-2) + `}}`},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			o := execute(t, &c, 200, tt.body)
			if o.Kind != bridgeclient.OutcomeStep {
				t.Fatalf("got %v %q %.200q", o.Kind, o.Code, o.Message)
			}
		})
	}
}

// Discover refuses an answer over MaxAnswerBytes instead of reading on.
func TestDiscoverRefusesAnOversizedAnswer(t *testing.T) {
	var c bridgeclient.Client
	body := `{"workflows":[{"workflowId":"` + strings.Repeat("a", bridgeclient.MaxAnswerBytes) + `"}]}`
	if _, err := c.Discover(context.Background(), answering(t, 200, body), testKey); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("err = %v", err)
	}
}

// A send step's content is the kind's JSON object as the Bridge wrote it,
// every field kept, up to the bound.
func TestSendContentKeptAsWritten(t *testing.T) {
	content := `{"title":"T","body":"B","data":{"k":"v"},"extra":[1,2]}`
	fits := `{"body":"` + strings.Repeat("x", bridgeclient.MaxContentBytes-len(`{"body":""}`)) + `"}`
	var c bridgeclient.Client
	for _, want := range []string{content, fits} {
		body := `{"status":"step","step":{"stepId":"s","type":"send","channel":"push","content":` + want + `}}`
		o := execute(t, &c, 200, body)
		if o.Kind != bridgeclient.OutcomeStep || string(o.Step.Content) != want {
			t.Fatalf("got kind %v code %q message %.200q content %.200s", o.Kind, o.Code, o.Message, o.Step.Content)
		}
	}
}
