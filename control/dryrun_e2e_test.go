package control_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// A dry run of a trigger to a topic mixing plain, opted-out, address-less,
// suppressed and quiet-hours subscribers counts each kind's outcomes and
// shows them one by one, writes nothing and calls no Bridge; the real
// trigger then does exactly what it counted.
func TestDryRunTriggerE2E(t *testing.T) {
	var calls atomic.Int64
	wf := bridge.MustWorkflow("news", func(ctx *bridge.Context, _ struct{}) error {
		calls.Add(1)
		_, err := bridge.Send(ctx, "mail", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "News", Body: "What is new"}, nil
		})
		return err
	})
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	do := func(method, path string, body any, want int) {
		t.Helper()
		if r := h.Do(method, path, key, body); r.Status != want && !(want == http.StatusOK && r.Status == http.StatusCreated) {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
	}
	email := func(id string) map[string]any {
		return map[string]any{"contacts": map[string]any{"email": []string{id + "@example.com"}}}
	}
	now := time.Now().UTC()
	for _, id := range []string{"a_plain", "b_plain", "c_optout", "d_noaddr", "e_suppressed", "f_quiet"} {
		body := email(id)
		if id == "d_noaddr" {
			body = map[string]any{}
		}
		do("PUT", "/v1/subscribers/"+id, body, http.StatusOK)
		do("PUT", "/v1/subscribers/"+id+"/subscriptions/launch", nil, http.StatusOK)
	}
	do("PATCH", "/v1/subscribers/c_optout/preferences", map[string]any{"channels": map[string]bool{"email": false}}, http.StatusOK)
	do("PUT", "/v1/suppressions/email/e_suppressed@example.com", map[string]any{}, http.StatusOK)
	do("PATCH", "/v1/subscribers/f_quiet/preferences", map[string]any{"quietHours": map[string]string{
		"start": now.Add(-time.Hour).Format("15:04"), "end": now.Add(3 * time.Hour).Format("15:04")}}, http.StatusOK)

	ctx := context.Background()
	before, err := h.Log().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	trigger := map[string]any{"workflowId": "news", "to": map[string]any{"topics": []string{"launch"}}, "transactionId": "launch-1"}
	type counts struct {
		Send    int
		Skipped map[string]int
		Held    map[string]int
		Failed  map[string]int
	}
	var dry struct {
		DryRun     bool
		Recipients int
		ByKind     map[string]counts
		Sample     []struct {
			SubscriberID string
			Kinds        map[string]string
		}
	}
	r := h.Do("POST", "/v1/events?dryRun=true", key, trigger)
	if r.Status != http.StatusOK {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &dry)
	wantEmail := counts{Send: 2, Skipped: map[string]int{"preference": 1, "no_address": 1, "suppressed": 1},
		Held: map[string]int{"quiet_hours": 1}}
	if !dry.DryRun || dry.Recipients != 6 || len(dry.ByKind) != 1 || !reflect.DeepEqual(dry.ByKind["email"], wantEmail) {
		t.Fatalf("dry run (the tenant's enabled kinds): %s", r.Body)
	}
	wantSample := map[string]string{"a_plain": "send", "b_plain": "send", "c_optout": "skipped:preference",
		"d_noaddr": "skipped:no_address", "e_suppressed": "skipped:suppressed", "f_quiet": "held:quiet_hours"}
	if len(dry.Sample) != 6 {
		t.Fatalf("sample: %s", r.Body)
	}
	for i, one := range dry.Sample {
		if want := wantSample[one.SubscriberID]; one.Kinds["email"] != want || (i > 0 && one.SubscriberID <= dry.Sample[i-1].SubscriberID) {
			t.Errorf("sample %d: %+v, want email %q, in id order", i, one, want)
		}
	}
	// Kinds asked for: sms has no channel (quiet hours hold a send
	// first, as Decide decides).
	trigger["kinds"] = []string{"sms", "email"}
	r = h.Do("POST", "/v1/events?dryRun=true", key, trigger)
	r.JSON(t, &dry)
	if r.Status != http.StatusOK || len(dry.ByKind) != 2 || !reflect.DeepEqual(dry.ByKind["email"], wantEmail) ||
		dry.ByKind["sms"].Failed["no_channel"] != 5 || dry.ByKind["sms"].Held["quiet_hours"] != 1 ||
		dry.Sample[0].Kinds["sms"] != "failed:no_channel" {
		t.Fatalf("dry run of sms and email: %d %s", r.Status, r.Body)
	}
	// One subscriber.
	r = h.Do("POST", "/v1/events?dryRun=true", key, map[string]any{"workflowId": "news", "to": map[string]any{"subscriberId": "c_optout"}})
	r.JSON(t, &dry)
	if r.Status != http.StatusOK || dry.Recipients != 1 || dry.ByKind["email"].Skipped["preference"] != 1 {
		t.Fatalf("dry run to one subscriber: %d %s", r.Status, r.Body)
	}
	for _, bad := range []struct {
		query string
		body  map[string]any
	}{
		{"?dryRun=true", map[string]any{"workflowId": "news", "to": map[string]any{"topics": []string{"launch"}}, "kinds": []string{"fax"}}},
		{"?dryRun=true", map[string]any{"workflowId": "news"}},
		{"?dryRun=maybe", map[string]any{"workflowId": "news", "to": map[string]any{"topics": []string{"launch"}}}},
	} {
		if r := h.Do("POST", "/v1/events"+bad.query, key, bad.body); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("dry run %s %v: %d %s", bad.query, bad.body, r.Status, r.Body)
		}
	}
	// "kinds" belongs to a dry run only.
	if r := h.Do("POST", "/v1/events", key, trigger); r.Status != http.StatusUnprocessableEntity && r.Status != http.StatusBadRequest {
		t.Errorf("a trigger with kinds: %d %s", r.Status, r.Body)
	}
	if after, err := h.Log().LastSeq(ctx); err != nil || after != before {
		t.Fatalf("the dry runs wrote to the log: last sequence %d, then %d (%v)", before, after, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the dry runs called the Bridge: %d executions", n)
	}

	// The real trigger does what the dry run counted.
	delete(trigger, "kinds")
	r = h.Do("POST", "/v1/events", key, trigger)
	if r.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	var res struct {
		Runs []struct{ RunID, SubscriberID string }
	}
	r.JSON(t, &res)
	got := counts{Skipped: map[string]int{"preference": 0, "no_address": 0, "suppressed": 0}, Held: map[string]int{"quiet_hours": 0}}
	for _, run := range res.Runs {
		st := h.WaitRun(key, run.RunID, "completed", "sleeping", "failed")
		var step struct {
			Status string
			Output struct{ Status, Reason string }
		}
		for _, s := range st["steps"].([]any) {
			if s.(map[string]any)["stepId"] == "mail" {
				b, _ := json.Marshal(s)
				_ = json.Unmarshal(b, &step)
			}
		}
		switch {
		case st["status"] == "sleeping" && step.Status == "sleeping": // a send sleeps only while held

			got.Held["quiet_hours"]++
		case st["status"] == "completed" && step.Output.Status == "sent":
			got.Send++
		case st["status"] == "completed" && step.Output.Status == "skipped":
			got.Skipped[step.Output.Reason]++
		default:
			t.Fatalf("run of %s: %v", run.SubscriberID, st)
		}
	}
	if !reflect.DeepEqual(got, wantEmail) {
		t.Fatalf("the trigger did %+v, the dry run counted %+v", got, wantEmail)
	}
	if n := m.Accepted(); n != 2 {
		t.Fatalf("%d mails, want 2", n)
	}
}
