package wire_test

import (
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
