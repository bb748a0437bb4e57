package delivery

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/smtp"
)

func TestRequestValidate(t *testing.T) {
	ok := Request{IdempotencyKey: "run_1:s", RunID: "run_1", StepID: "s", SubscriberID: "ada", Channel: "email"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	bad := Request{IdempotencyKey: strings.Repeat("k", maxKeyBytes+1), RunID: "a\nb", To: "\x00", Subject: "\xff"}
	err := bad.Validate()
	var re *RequestError
	if !errors.Is(err, ErrInvalidRequest) || !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
	var fields []string
	for _, p := range re.Problems {
		fields = append(fields, p.Field)
	}
	if got, want := strings.Join(fields, ","), "idempotencyKey,runId,stepId,subscriberId,to,channel,content.subject"; got != want {
		t.Fatalf("fields %s, want %s", got, want)
	}
	if r := (Request{SubscriberID: "a", To: "b"}); r.Recipient() != "b" {
		t.Fatal("To does not override the recipient")
	}
}

func TestMessageID(t *testing.T) {
	a := messageID("ten_1", "run_1:s", "noreply@example.com")
	if a != messageID("ten_1", "run_1:s", "other@example.com") {
		t.Fatal("the id depends on the sender's local part")
	}
	if a == messageID("ten_2", "run_1:s", "noreply@example.com") || a == messageID("ten_1", "run_1:t", "noreply@example.com") {
		t.Fatal("different tenants or keys share an id")
	}
	if !strings.HasSuffix(a, ".herald@example.com") || len(a) != 26+len(".herald@example.com") {
		t.Fatalf("id = %q", a)
	}
	for _, from := range []string{"a@[127.0.0.1]", "a@ex ample.com", "a@ex..com", "a@"} {
		id := messageID("t", "k", from)
		if !strings.HasSuffix(id, "@herald.invalid") {
			t.Errorf("from %q: id %q", from, id)
		}
		if err := (smtp.Message{To: "x@example.com", MessageID: id}).Validate(); err != nil {
			t.Errorf("from %q: id %q is not valid: %v", from, id, err)
		}
	}
}

func TestSMTPConfig(t *testing.T) {
	c, err := smtpConfig(map[string]any{"host": "smtp.example.com", "port": 587.0, "secure": true, "username": "u",
		"password": "p", "fromEmail": "a@example.com", "fromName": "A"})
	want := smtp.Config{Host: "smtp.example.com", Port: 587, Secure: true, Username: "u", Password: "p",
		FromEmail: "a@example.com", FromName: "A"}
	if err != nil || c != want {
		t.Fatalf("smtpConfig = %v, %v", c, err)
	}
	if _, err := smtpConfig(map[string]any{"host": "h", "port": 25.5, "fromEmail": "a@example.com"}); !errors.Is(err, smtp.ErrInvalid) {
		t.Fatalf("a fractional port: %v", err)
	}
	if _, err := smtpConfig(map[string]any{"password": "p"}); err == nil || strings.Contains(err.Error(), `"p"`) {
		t.Fatalf("an empty config: %v", err)
	}
}
