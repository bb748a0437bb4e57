package bridgeclient_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridgeclient"
)

// invalidSteps are the kinds of invalid value a Bridge may answer in a
// step, of every step type, each with the field its message must name.
// A retry would get the same answer: each fails the run at once.
var invalidSteps = []struct {
	name, step, stepID, field string
}{
	// delay
	{"delay: negative seconds", `{"stepId":"d","type":"delay","seconds":-1}`, "d", "seconds"},
	{"delay: seconds past the longest span", `{"stepId":"d","type":"delay","seconds":1e300}`, "d", "seconds"},
	{"delay: seconds as a string", `{"stepId":"d","type":"delay","seconds":"5"}`, "d", "seconds"},
	{"delay: until not a time", `{"stepId":"d","type":"delay","until":"tomorrow"}`, "d", "until"},
	{"delay: until an object without localTime", `{"stepId":"d","type":"delay","until":{}}`, "d", "until"},
	{"delay: localTime 25:00", `{"stepId":"d","type":"delay","until":{"localTime":"25:00"}}`, "d", "until.localTime"},
	{"delay: localTime 09:60", `{"stepId":"d","type":"delay","until":{"localTime":"09:60"}}`, "d", "until.localTime"},
	{"delay: localTime 9:00", `{"stepId":"d","type":"delay","until":{"localTime":"9:00"}}`, "d", "until.localTime"},
	{"delay: neither seconds nor until", `{"stepId":"d","type":"delay"}`, "d", "seconds/until"},
	{"delay: seconds and until", `{"stepId":"d","type":"delay","seconds":1,"until":"2030-01-01T00:00:00Z"}`, "d", "seconds/until"},
	// waitForEvent
	{"wait: no event", `{"stepId":"w","type":"waitForEvent"}`, "w", "event"},
	{"wait: negative timeout", `{"stepId":"w","type":"waitForEvent","event":"e","timeout":-5}`, "w", "timeout"},
	{"wait: negative timeout string", `{"stepId":"w","type":"waitForEvent","event":"e","timeout":"-1h"}`, "w", "timeout"},
	{"wait: timeout not a duration", `{"stepId":"w","type":"waitForEvent","event":"e","timeout":"soon"}`, "w", "timeout"},
	// digest
	{"digest: negative window", `{"stepId":"g","type":"digest","window":-60}`, "g", "window"},
	{"digest: window 0", `{"stepId":"g","type":"digest","window":0}`, "g", "window"},
	{"digest: neither window nor cron", `{"stepId":"g","type":"digest"}`, "g", "window"},
	{"digest: window and cron", `{"stepId":"g","type":"digest","window":60,"cron":"@daily"}`, "g", "window/cron"},
	{"digest: empty cron", `{"stepId":"g","type":"digest","cron":""}`, "g", "cron"},
	{"digest: cron not a string", `{"stepId":"g","type":"digest","cron":5}`, "g", "cron"},
	// throttle
	{"throttle: limit 0", `{"stepId":"t","type":"throttle","limit":0,"window":60}`, "t", "limit"},
	{"throttle: negative limit", `{"stepId":"t","type":"throttle","limit":-3,"window":60}`, "t", "limit"},
	{"throttle: fractional limit", `{"stepId":"t","type":"throttle","limit":2.5,"window":60}`, "t", "limit"},
	{"throttle: no limit", `{"stepId":"t","type":"throttle","window":60}`, "t", "limit"},
	{"throttle: negative window", `{"stepId":"t","type":"throttle","limit":3,"window":-60}`, "t", "window"},
	{"throttle: window 0", `{"stepId":"t","type":"throttle","limit":3,"window":0}`, "t", "window"},
	{"throttle: window over 31 days", `{"stepId":"t","type":"throttle","limit":3,"window":"745h"}`, "t", "window"},
	{"throttle: no window", `{"stepId":"t","type":"throttle","limit":3}`, "t", "window"},
	{"throttle: key not a string", `{"stepId":"t","type":"throttle","limit":3,"window":60,"key":7}`, "t", "key"},
	// send
	{"send: no channel", `{"stepId":"s","type":"send","content":{"body":"b"}}`, "s", "channel"},
	{"send: no content", `{"stepId":"s","type":"send","channel":"email"}`, "s", "content"},
	{"send: content not an object", `{"stepId":"s","type":"send","channel":"email","content":"hi"}`, "s", "content"},
	{"send: empty to", `{"stepId":"s","type":"send","channel":"email","to":"","content":{"body":"b"}}`, "s", "to"},
	{"send: channel not a string", `{"stepId":"s","type":"send","channel":5,"content":{"body":"b"}}`, "s", "channel"},
	// any step
	{"no stepId", `{"type":"delay","seconds":1}`, "", "stepId"},
	{"stepId not a string", `{"stepId":7,"type":"delay","seconds":1}`, "", "stepId"},
	{"unknown type", `{"stepId":"x","type":"teleport"}`, "x", "type"},
	{"no type", `{"stepId":"x"}`, "x", "type"},
}

// TestInvalidStepValuesFailAtOnce: every kind of invalid step value fails
// the run terminally with invalid_step, the outcome naming the step (its
// stepId, for the run's error) and the message naming the step and the
// field, never the value.
func TestInvalidStepValuesFailAtOnce(t *testing.T) {
	var c bridgeclient.Client
	for _, tt := range invalidSteps {
		t.Run(tt.name, func(t *testing.T) {
			o := execute(t, &c, 200, `{"status":"step","step":`+tt.step+`}`)
			if o.Kind != bridgeclient.OutcomeTerminal || o.Code != apierr.CodeInvalidStep || o.Step != nil || o.StepID != tt.stepID {
				t.Fatalf("got kind %v code %q stepId %q step %v (%s), want terminal invalid_step of %q", o.Kind, o.Code, o.StepID, o.Step, o.Message, tt.stepID)
			}
			named := `step "` + tt.stepID + `": `
			if tt.stepID == "" {
				named = "a "
			}
			if !strings.Contains(o.Message, named) || !strings.Contains(o.Message, ": "+tt.field+" must ") {
				t.Fatalf("message %q names not the step %q and the field %q", o.Message, tt.stepID, tt.field)
			}
			if !safeMessage.MatchString(o.Message) {
				t.Fatalf("message %q is not of the shape the tenant may see", o.Message)
			}
			for _, v := range []string{"25:00", "09:60", "tomorrow", "teleport", "soon", "2.5", "745h", "-60", "hi"} {
				if strings.Contains(tt.step, v) && strings.Contains(o.Message, v) {
					t.Fatalf("message %q quotes the value %q", o.Message, v)
				}
			}
		})
	}
}

// TestStepArgumentsRefusedBySDKFailAtOnce: an SDK that refuses a step's
// arguments answers 500 invalid_step with the step's id: the run fails at
// once, its error naming the step and the SDK's reason, which names the
// argument.
func TestStepArgumentsRefusedBySDKFailAtOnce(t *testing.T) {
	var c bridgeclient.Client
	o := execute(t, &c, 500, `{"error":{"code":"invalid_step","message":"bridge: invalid step: local time \"25:00\" is not HH:MM, 00:00 to 23:59","stepId":"d"}}`)
	if o.Kind != bridgeclient.OutcomeTerminal || o.Code != apierr.CodeInvalidStep || o.StepID != "d" ||
		o.Message != `invalid step "d": bridge: invalid step: local time "25:00" is not HH:MM, 00:00 to 23:59` {
		t.Fatalf("got %+v", o)
	}
	// Without a step id (the SDK refused an empty one), still at once.
	o = execute(t, &c, 500, `{"error":{"code":"invalid_step","message":"bridge: invalid step: empty step id"}}`)
	if o.Kind != bridgeclient.OutcomeTerminal || o.Code != apierr.CodeInvalidStep || o.StepID != "" {
		t.Fatalf("got %+v", o)
	}
}
