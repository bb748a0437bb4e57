package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestDeliveriesFiltersAndOrder: GET /v1/deliveries narrows by subscriber,
// workflow, status, kind, channel and a time window, lists newest first
// with order=desc (oldest first by default), names each row's workflow,
// and answers a malformed filter with 422 validation_failed naming it.
func TestDeliveriesFiltersAndOrder(t *testing.T) {
	f := newConsoleFixture(t) // ada's send sent, then bob's skipped
	type list struct {
		Data []struct {
			RunID, SubscriberID, WorkflowID, Status, Kind, ChannelKey, Address string
		}
	}
	get := func(q string) list {
		t.Helper()
		r := f.h.Do("GET", "/v1/deliveries?"+q, f.key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		var l list
		r.JSON(t, &l)
		return l
	}
	subs := func(l list) string {
		s := ""
		for _, d := range l.Data {
			s += d.SubscriberID + ":" + d.Status + " "
		}
		return s
	}
	// The two runs send at once: either may come first.
	asc := subs(get(""))
	desc := "bob:skipped ada:sent "
	if asc == desc {
		desc = "ada:sent bob:skipped "
	} else if asc != "ada:sent bob:skipped " {
		t.Fatalf("oldest first: %q", asc)
	}
	if got := subs(get("order=desc")); got != desc {
		t.Errorf("newest first: %q, oldest first %q", got, asc)
	}
	for q, want := range map[string]string{
		"subscriberId=bob": "bob:skipped ", "status=sent": "ada:sent ", "kind=email&order=desc": desc,
		"channelKey=email-smtp&subscriberId=ada": "ada:sent ", "workflowId=welcome&status=skipped": "bob:skipped ",
		"workflowId=broken": "", "kind=sms": "", "status=bounced": "",
		"since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)):  "",
		"until=" + url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)): "",
		"since=2020-01-01T00:00:00Z&until=2100-01-01T00:00:00Z&order=desc":                desc,
		"runId=" + f.adaRun + "&order=desc":                                               "ada:sent ",
	} {
		if got := subs(get(q)); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	if d := get("subscriberId=ada").Data; len(d) != 1 || d[0].WorkflowID != "welcome" || d[0].Address != "ada@example.com" {
		t.Errorf("ada's delivery: %+v", d)
	}
	for q, field := range map[string]string{"status=running": "status", "kind=fax": "kind", "order=newest": "order",
		"since=yesterday": "since", "until=2026-13-01T00:00:00Z": "until", "channelKey=a%00b": "channelKey", "subscriberId=" + url.QueryEscape(string(make([]byte, 300))): "subscriberId"} {
		r := f.h.Do("GET", "/v1/deliveries?"+q, f.key, nil)
		var e struct {
			Error struct {
				Code    string
				Details []struct{ Field string }
			}
		}
		r.JSON(t, &e)
		if r.Status != http.StatusUnprocessableEntity || e.Error.Code != "validation_failed" || len(e.Error.Details) == 0 || e.Error.Details[0].Field != field {
			t.Errorf("%s: %d %s, want 422 validation_failed on %s", q, r.Status, r.Body, field)
		}
	}
}
