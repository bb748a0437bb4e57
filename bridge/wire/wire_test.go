package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

func TestStepResumeAt(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	secs, until := 1.5, now.Add(time.Hour)
	for _, tt := range []struct {
		step wire.Step
		want time.Time
	}{
		{wire.Step{Type: wire.StepDelay, Seconds: &secs}, now.Add(1500 * time.Millisecond)},
		{wire.Step{Type: wire.StepDelay, Until: &until}, until},
		{wire.Step{Type: wire.StepRun}, now},
	} {
		if got := tt.step.ResumeAt(now); !got.Equal(tt.want) {
			t.Errorf("ResumeAt of %+v = %v, want %v", tt.step, got, tt.want)
		}
	}
}

func TestSendStepCarriesItsContentAsWritten(t *testing.T) {
	s := wire.Step{StepID: "s", Type: wire.StepSend, Channel: "chat", Content: json.RawMessage(`{"body":"<b>","blocks":[{"type":"divider"}]}`)}
	got, err := wire.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"stepId":"s","type":"send","channel":"chat","to":null,"content":{"body":"<b>","blocks":[{"type":"divider"}]}}`; string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back wire.Step
	if err := json.Unmarshal(got, &back); err != nil || string(back.Content) != string(s.Content) {
		t.Fatalf("decoded content %s, %v", back.Content, err)
	}
}

func TestSendResultSkipped(t *testing.T) {
	var r wire.SendResult
	if err := json.Unmarshal([]byte(`{"attemptId":"a","status":"skipped","reason":"suppressed"}`), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Skipped() || r.Reason != wire.SkipSuppressed {
		t.Fatalf("%+v", r)
	}
	sent := wire.SendResult{AttemptID: "a", Status: wire.SendSent}
	if out, _ := json.Marshal(sent); sent.Skipped() || string(out) != `{"attemptId":"a","status":"sent"}` {
		t.Fatalf("sent result %s", out)
	}
}
