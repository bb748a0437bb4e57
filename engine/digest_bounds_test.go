package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/internal/testherald"
)

// A digest window takes joined payloads up to MaxDigestJoinedBytes: 17
// runs of 250 KB each make windows of 5 (the opener and 4 joined), all
// completing, every payload digested once. On main the one window's
// output (4.25 MB) was refused by the event log forever and its run never
// finished.
//
// 17 triggers of 250 KB at once are a heavy request load for a busy
// machine: the service may answer 503 busy (the request did not finish in
// time), or not answer within the client's timeout. The test then does
// what the contract tells a client to do: it repeats the trigger, with the
// same transactionId, after Retry-After; a repeat starts nothing new, so
// every payload is still digested once.
func TestDigestAggregateIsBounded(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	const n, size = 17, 250_000
	wf := bridge.MustWorkflow("big", func(ctx *bridge.Context, _ any) error {
		res, err := bridge.Digest(ctx, "batch", 4*time.Second)
		if err != nil {
			return err
		}
		_, err = bridge.Run(ctx, "count", func(context.Context) (int, error) { return res.Count, nil })
		return err
	})
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	blob := strings.Repeat("b", size)
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = triggerRepeating(h, key, map[string]any{"workflowId": "big", "to": map[string]any{"subscriberId": "author"},
				"payload": map[string]any{"blob": blob}, "transactionId": fmt.Sprintf("big-%d", i)})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	total, windows := 0, 0
	for _, id := range ids {
		run := h.WaitRun(key, id, "completed", "digested", "failed")
		switch run["status"] {
		case "completed":
			steps := run["steps"].([]any)
			count := int(steps[1].(map[string]any)["output"].(float64))
			if count > 1+engine.MaxDigestJoinedBytes/size {
				t.Errorf("a window of %d payloads of %d bytes", count, size)
			}
			total += count
			windows++
		case "digested":
		default:
			t.Fatalf("run %.300v", run)
		}
	}
	if total != n || windows < 4 {
		t.Fatalf("%d payloads digested in %d windows, want %d in at least 4", total, windows, n)
	}
}

// triggerRepeating sends a trigger, repeating it while the service is busy
// (503, after Retry-After) or does not answer, as a client does, for up to
// two minutes; body must carry a transactionId. It returns the one run.
func triggerRepeating(h *testherald.Herald, key string, body map[string]any) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := h.API(key).Send(context.Background(), "POST", "/v1/events", body)
		wait := time.Second
		switch {
		case err != nil:
		case r.Status == http.StatusServiceUnavailable:
			if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil {
				wait = time.Duration(s) * time.Second
			}
		case r.Status != http.StatusAccepted:
			return "", fmt.Errorf("trigger %v: %d %s", body["transactionId"], r.Status, r.Body)
		default:
			var res struct {
				Runs []struct{ RunID, Status string }
			}
			if err := json.Unmarshal(r.Body, &res); err != nil || len(res.Runs) != 1 || res.Runs[0].Status != "dispatched" {
				return "", fmt.Errorf("trigger %v: %s", body["transactionId"], r.Body)
			}
			return res.Runs[0].RunID, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("trigger %v: no answer but busy for two minutes (last: %v)", body["transactionId"], err)
		}
		time.Sleep(wait)
	}
}
