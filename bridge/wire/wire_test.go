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

// TestStepUntilLocalTime: a delay's "until" is an instant or an object
// {"localTime":…}, and a digest carries a window or a cron; each reads
// back as it was written.
func TestStepUntilLocalTime(t *testing.T) {
	cron, key := "0 9 * * 1-5", "k"
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		step wire.Step
		want string
	}{
		{wire.Step{StepID: "d", Type: wire.StepDelay, LocalTime: "09:00"}, `{"stepId":"d","type":"delay","until":{"localTime":"09:00"}}`},
		{wire.Step{StepID: "d", Type: wire.StepDelay, Until: &until}, `{"stepId":"d","type":"delay","until":"2026-01-02T03:04:05Z"}`},
		{wire.Step{StepID: "g", Type: wire.StepDigest, Cron: &cron, Key: &key}, `{"stepId":"g","type":"digest","cron":"0 9 * * 1-5","key":"k"}`},
	} {
		got, err := wire.Marshal(tc.step)
		if err != nil || string(got) != tc.want {
			t.Fatalf("got %s, %v; want %s", got, err, tc.want)
		}
		var back wire.Step
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := wire.Marshal(back); string(again) != tc.want {
			t.Fatalf("read back as %s, want %s", again, tc.want)
		}
	}
	for _, bad := range []string{`{"stepId":"d","type":"delay","until":{}}`, `{"stepId":"d","type":"delay","until":{"localTime":9}}`,
		`{"stepId":"d","type":"delay","until":"tomorrow"}`} {
		var s wire.Step
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s read as %+v", bad, s)
		}
	}
	for in, ok := range map[string]bool{"00:00": true, "23:59": true, "24:00": false, "09:60": false, "9:00": false, "ab:cd": false, "": false} {
		if _, _, got := wire.ParseLocalTime(in); got != ok {
			t.Errorf("ParseLocalTime(%q) ok = %v, want %v", in, got, ok)
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
