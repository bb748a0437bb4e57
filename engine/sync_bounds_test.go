package engine_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

func discoverBody(t *testing.T, n, scheduled int, schedule string) string {
	t.Helper()
	type wf struct {
		WorkflowID string  `json:"workflowId"`
		Schedule   *string `json:"schedule"`
	}
	var wfs []wf
	for i := range n {
		w := wf{WorkflowID: fmt.Sprintf("wf_%d", i)}
		if i < scheduled {
			w.Schedule = &schedule
		}
		wfs = append(wfs, w)
	}
	b, err := json.Marshal(map[string]any{"workflows": wfs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A sync is refused (422, nothing recorded, nothing armed) with more than
// 1,000 workflows, more than 100 schedules, or a schedule ticking more
// often than HERALD_CRON_MIN_INTERVAL; the error names the workflow.
func TestSyncBounds(t *testing.T) {
	t.Parallel()
	h, key, b := startRaw(t, testherald.Options{Env: map[string]string{"HERALD_CRON_MIN_INTERVAL": "1m"}})
	refused := []struct {
		name, body, code, detail string
	}{
		{"1,001 workflows", discoverBody(t, 1001, 0, ""), "too_many_workflows", "1001"},
		{"101 schedules", discoverBody(t, 101, 101, "0 9 * * *"), "too_many_schedules", "101"},
		{"every 2 seconds", discoverBody(t, 3, 1, "*/2 * * * * *"), "schedule_too_frequent", `workflow "wf_0" runs every 2s`},
		{"a 10 KB schedule", discoverBody(t, 1, 1, strings.Repeat("*", 10_000)), "invalid_schedule", "is over 256 bytes"},
		{"twice a minute now and then", discoverBody(t, 1, 1, "0,30 0 * * * *"), "schedule_too_frequent", `"wf_0" runs every 30s`},
	}
	for _, tt := range refused {
		b.set("", 200, tt.body)
		r := h.Do("POST", "/v1/sync", key, nil)
		var body struct {
			Error struct {
				Details []struct{ Field, Problem string }
			}
		}
		_ = json.Unmarshal(r.Body, &body)
		if r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != tt.code || len(body.Error.Details) != 1 ||
			!strings.Contains(body.Error.Details[0].Problem, tt.detail) {
			t.Errorf("%s: %d %.400s", tt.name, r.Status, r.Body)
		}
		if len(r.Body) > 4096 {
			t.Errorf("%s: an answer of %d bytes", tt.name, len(r.Body))
		}
		if r := h.Do("GET", "/v1/workflows", key, nil); string(r.Body) != "{\"workflows\":[]}\n" {
			t.Fatalf("%s: a refused sync recorded %.200s", tt.name, r.Body)
		}
	}
	// A 10 KB workflow id is named, clipped.
	b.set("", 200, `{"workflows":[{"workflowId":"`+strings.Repeat("w", 10_000)+`","schedule":null}]}`)
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "invalid_workflow_id" || len(r.Body) > 4096 {
		t.Errorf("10 KB workflow id: %d, %d bytes", r.Status, len(r.Body))
	}
	b.set("", 200, discoverBody(t, 1000, 100, "*/5 * * * *"))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync at the bounds: %d %.400s", r.Status, r.Body)
	}
}
