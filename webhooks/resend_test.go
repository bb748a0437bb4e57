package webhooks_test

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald/internal/testwait"
)

// TestResendAMessage: a message delivered once is sent again on
// POST /v1/webhooks/{id}/messages/{messageId}/resend (202): the same
// webhook-id, signed by the endpoint's secret, listed as the message's
// second attempt; an unknown message or endpoint is 404, and an empty
// body or {} is the only body accepted.
func TestResendAMessage(t *testing.T) {
	h := startService(t, "", nil)
	f := newFixture(t, h, "Acme")
	recv := newReceiver(t, nil)
	hookID, secret := f.webhook(recv.URL, "delivery.sent")
	f.inApp("run_1")
	first := recv.waitFor(t, "the message", func(got []received) bool { return len(got) == 1 })
	var id string
	testwait.Until(t, "the attempt recorded", func() error {
		as := f.attempts(hookID)
		if len(as) != 1 {
			return fmt.Errorf("%d attempts", len(as))
		}
		id, _ = as[0]["eventId"].(string)
		return nil
	})
	if id == "" || id != first[0].ID {
		t.Fatalf("the attempt's message id %q, the request's %q", id, first[0].ID)
	}

	var v struct {
		WebhookID, MessageID string
		Accepted             bool
	}
	f.call("POST", "/v1/webhooks/"+hookID+"/messages/"+id+"/resend", nil, 202).JSON(t, &v)
	if v.WebhookID != hookID || v.MessageID != id || !v.Accepted {
		t.Fatalf("resend: %+v", v)
	}
	got := recv.waitFor(t, "the message again", func(got []received) bool { return len(got) == 2 })
	if got[1].ID != id || got[1].Type != "delivery.sent" || !verifySignature(secret, got[1].ID, got[1].Timestamp, got[1].Body, got[1].Signature) {
		t.Fatalf("the resent message: id %q type %q (want %q), signature verified: %v", got[1].ID, got[1].Type, id,
			verifySignature(secret, got[1].ID, got[1].Timestamp, got[1].Body, got[1].Signature))
	}
	testwait.Until(t, "the second attempt listed", func() error {
		as := f.attempts(hookID)
		if len(as) != 2 || as[1]["eventId"] != id || as[1]["attempt"] != float64(2) || as[1]["status"] != "succeeded" {
			return fmt.Errorf("attempts: %v", as)
		}
		return nil
	})

	f.call("POST", "/v1/webhooks/"+hookID+"/messages/msg_unknown/resend", map[string]any{}, 404)
	f.call("POST", "/v1/webhooks/wh_unknown/messages/"+id+"/resend", nil, 404)
	f.call("POST", "/v1/webhooks/"+hookID+"/messages/"+id+"/resend", map[string]any{"x": 1}, 422)
}
