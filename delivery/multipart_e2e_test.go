package delivery_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// TestSMTPSendsHTMLAndTextWithReplyTo: a send step with html, text and
// replyTo, run by the engine through the real service to an SMTP server,
// arrives as multipart/alternative with the text part and the HTML part,
// and with the Reply-To header: what the tenant wrote, not one body.
func TestSMTPSendsHTMLAndTextWithReplyTo(t *testing.T) {
	const (
		html    = "<p>Hello <b>Ada</b></p>"
		text    = "Hello Ada"
		replyTo = "Support <help@herald.test>"
	)
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	wf := bridge.MustWorkflow("rich", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Notify(ctx, "mail", func(context.Context) (bridge.EmailContent, error) {
			return bridge.EmailContent{Subject: "Rich", HTML: html, Text: text, ReplyTo: replyTo}, nil
		})
		return err
	})
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(wf))
	r := f.tenantCall("POST", "/v1/events", map[string]any{"workflowId": "rich", "to": map[string]any{"subscriberId": "ada"}}, http.StatusAccepted)
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(t, &tr)
	if len(tr.Runs) != 1 {
		t.Fatalf("trigger: %s", r.Body)
	}
	if run := f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}

	got := m.Messages()
	if len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if rt := msg.Header.Get("Reply-To"); rt != `"Support" <help@herald.test>` && rt != replyTo {
		t.Errorf("Reply-To %q, want %q", rt, replyTo)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v), want multipart/alternative", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var types, bodies []string
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		typ, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		body, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		types, bodies = append(types, typ), append(bodies, string(bytes.TrimRight(body, "\r\n")))
	}
	if len(types) != 2 || types[0] != "text/plain" || bodies[0] != text || types[1] != "text/html" || bodies[1] != html {
		t.Fatalf("parts %q with bodies %q, want text/plain %q then text/html %q", types, bodies, text, html)
	}
}
