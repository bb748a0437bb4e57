package events

// ThrottleCounted counts one run at one throttle step, on the throttle
// subject (aggregate throttle, id = ThrottleID(workflow, subscriber, key)).
const ThrottleCounted = "ThrottleCounted"

// ThrottleID names the counter of one (workflow, subscriber, key).
func ThrottleID(workflow, subscriber, key string) string {
	return workflow + "\x00" + subscriber + "\x00" + key
}

// ThrottleCountedData is one run counted at one of its throttle steps.
// Count is the number of runs counted on the subject within the step's
// window, this one included, fixed when the run was counted so that a
// replay of the step answers the same. The event's time is the instant
// the run reached the step.
type ThrottleCountedData struct {
	RunID  string `json:"runId"`
	StepID string `json:"stepId"`
	Count  int    `json:"count"`
}
