package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// inboxFixture is a running service with a tenant whose Bridge sends each
// trigger of workflow "note" as an in-app message (payload {"subject",
// "body"}) to the triggered subscriber.
type inboxFixture struct {
	t      testing.TB
	h      *testherald.Herald
	tenant string
	key    string
}

func newInboxFixture(t testing.TB, opts testherald.Options, subscribers ...string) *inboxFixture {
	t.Helper()
	h := testherald.Start(t, opts)
	tenant, key := h.Tenant("Inbox Co")
	f := &inboxFixture{t: t, h: h, tenant: tenant, key: key}
	f.call("POST", "/v1/channels", key, map[string]any{"channelKey": "in-app", "config": map[string]any{}}, http.StatusCreated)
	for _, s := range subscribers {
		f.call("PUT", "/v1/subscribers/"+url.PathEscape(s), key, map[string]any{}, http.StatusCreated)
	}
	type note struct {
		Subject string `json:"subject"`
		Body    string `json:"body"`
	}
	wf := bridge.MustWorkflow("note", func(ctx *bridge.Context, p note) error {
		_, err := bridge.Notify(ctx, "inbox", func(context.Context) (bridge.InAppContent, error) {
			return bridge.InAppContent{Subject: p.Subject, Body: p.Body, Data: []byte(`{"n":1}`),
				PrimaryAction: &bridge.InAppAction{Label: "Open", URL: "https://app.example.com/x"}}, nil
		})
		return err
	})
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	return f
}

// call sends a request and fails the test unless it answers want.
func (f *inboxFixture) call(method, path, token string, body any, want int) testherald.Response {
	f.t.Helper()
	r := f.h.Do(method, path, token, body)
	if r.Status != want {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
	}
	return r
}

// token mints an inbox token for subscriber.
func (f *inboxFixture) token(subscriber string) string {
	f.t.Helper()
	var tok struct{ Token, ExpiresAt string }
	f.call("POST", "/v1/subscribers/"+url.PathEscape(subscriber)+"/inbox-tokens", f.key, nil, http.StatusCreated).JSON(f.t, &tok)
	return tok.Token
}

// trigger starts workflow note for subscriber and returns its run id.
func (f *inboxFixture) trigger(subscriber, body string) string {
	f.t.Helper()
	var tr struct{ Runs []struct{ RunID string } }
	f.call("POST", "/v1/events", f.key, map[string]any{"workflowId": "note",
		"to": map[string]any{"subscriberId": subscriber}, "payload": map[string]any{"subject": "S " + body, "body": body}},
		http.StatusAccepted).JSON(f.t, &tr)
	return tr.Runs[0].RunID
}

// send triggers a message and waits until its run completed: the message
// is then in the inbox.
func (f *inboxFixture) send(subscriber, body string) {
	f.t.Helper()
	f.h.WaitRun(f.key, f.trigger(subscriber, body), "completed")
}

type inboxMessage struct {
	MessageID     string         `json:"messageId"`
	WorkflowID    *string        `json:"workflowId"`
	RunID         string         `json:"runId"`
	Subject       *string        `json:"subject"`
	Body          string         `json:"body"`
	Data          map[string]any `json:"data"`
	PrimaryAction map[string]any `json:"primaryAction"`
	CreatedAt     string         `json:"createdAt"`
	SeenAt        *string        `json:"seenAt"`
	ReadAt        *string        `json:"readAt"`
	ArchivedAt    *string        `json:"archivedAt"`
}

type inboxCounts struct {
	Unread int `json:"unread"`
	Unseen int `json:"unseen"`
}

// list returns the bodies of GET /v1/inbox/messages?filter=, newest first.
func (f *inboxFixture) list(token, filter string) []inboxMessage {
	f.t.Helper()
	var l struct{ Data []inboxMessage }
	f.call("GET", "/v1/inbox/messages?filter="+filter, token, nil, http.StatusOK).JSON(f.t, &l)
	return l.Data
}

func bodies(msgs []inboxMessage) string {
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += ","
		}
		out += m.Body
	}
	return out
}

func (f *inboxFixture) counts(token string) inboxCounts {
	f.t.Helper()
	var c inboxCounts
	f.call("GET", "/v1/inbox/counts", token, nil, http.StatusOK).JSON(f.t, &c)
	return c
}

func (f *inboxFixture) expectCounts(token string, unread, unseen int) {
	f.t.Helper()
	if c := f.counts(token); c.Unread != unread || c.Unseen != unseen {
		f.t.Fatalf("counts %+v, want unread %d unseen %d", c, unread, unseen)
	}
}

func (f *inboxFixture) mark(token, messageID, action string) inboxMessage {
	f.t.Helper()
	var m inboxMessage
	f.call("POST", fmt.Sprintf("/v1/inbox/messages/%s/%s", messageID, action), token, nil, http.StatusOK).JSON(f.t, &m)
	return m
}
