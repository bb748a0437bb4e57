package delivery

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/smtp"
)

func TestRequestValidate(t *testing.T) {
	ok := Request{IdempotencyKey: "run_1:s", RunID: "run_1", StepID: "s", SubscriberID: "ada", Channel: "email",
		Content: json.RawMessage(`{"subject":"s","body":"b"}`)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	// The byte bound holds where the characters would pass: 1024 bytes of
	// 2-byte characters are 512 characters.
	atBound := ok
	atBound.IdempotencyKey = strings.Repeat("é", maxKeyBytes/2)
	if err := atBound.Validate(); err != nil {
		t.Fatalf("a key of %d bytes: %v", maxKeyBytes, err)
	}
	bad := Request{IdempotencyKey: strings.Repeat("é", maxKeyBytes/2+1), RunID: "a\nb", To: "\x00",
		Content: json.RawMessage("{\"subject\":\"\xff\",\"body\":\"\xfe\"}")}
	err := bad.Validate()
	var ve *apierr.ValidationError
	if !errors.Is(err, ErrInvalidRequest) || !errors.Is(err, apierr.ErrInvalid) || !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.Field+" "+p.Problem)
	}
	want := []string{
		"idempotencyKey must be at most 1024 bytes", "runId must be printable text", "stepId is required",
		"subscriberId is required", "to must be printable text", "channel is required",
		"content must be valid UTF-8",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%q\nwant\n%q", got, want)
	}
	if want := "delivery: invalid request: " + strings.Join(want, "; "); err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	if c := Classify(err); c.Code != apierr.CodeValidationFailed || !c.Terminal {
		t.Fatalf("Classify = %+v", c)
	}
	noContent := ok
	noContent.Content = nil
	if err := noContent.Validate(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "content" {
		t.Fatalf("no content: %v", err)
	}
	for _, c := range []string{`"text"`, `[1]`, `{"a":`, `null`} {
		r := ok
		r.Content = json.RawMessage(c)
		if err := r.Validate(); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "content" {
			t.Fatalf("content %s: %v", c, err)
		}
	}
	if r := (Request{SubscriberID: "a", To: "b"}); r.Recipient() != "b" {
		t.Fatal("To does not override the recipient")
	}
}

func TestMessageID(t *testing.T) {
	a := email.MessageID("ten_1", "run_1:s", "noreply@example.com")
	if a != email.MessageID("ten_1", "run_1:s", "other@example.com") {
		t.Fatal("the id depends on the sender's local part")
	}
	if a == email.MessageID("ten_2", "run_1:s", "noreply@example.com") || a == email.MessageID("ten_1", "run_1:t", "noreply@example.com") {
		t.Fatal("different tenants or keys share an id")
	}
	if !strings.HasSuffix(a, ".herald@example.com") || len(a) != 26+len(".herald@example.com") {
		t.Fatalf("id = %q", a)
	}
	for _, from := range []string{"a@[127.0.0.1]", "a@ex ample.com", "a@ex..com", "a@"} {
		id := email.MessageID("t", "k", from)
		if !strings.HasSuffix(id, "@herald.invalid") {
			t.Errorf("from %q: id %q", from, id)
		}
		if err := (smtp.Message{To: "x@example.com", MessageID: id}).Validate(); err != nil {
			t.Errorf("from %q: id %q is not valid: %v", from, id, err)
		}
	}
}

func TestValidateContent(t *testing.T) {
	for _, tc := range []struct {
		kind, content string
		want          []string // "field problem"s; none: valid
	}{
		{"email", `{"subject":"Hi","body":"b"}`, nil},
		{"email", `{"subject":"Hi","html":"<p>h</p>","text":"t","replyTo":"help@example.com"}`, nil},
		{"email", `{"subject":"Hi"}`, []string{"content.body is required unless html or text is given"}},
		{"email", `{"body":"b","htm":"x"}`, []string{"content.htm is not a field of email content", "content.subject is required"}},
		{"email", `{"subject":"","body":"b","replyTo":"Ada at x.io"}`, []string{"content.subject must not be empty", "content.replyTo must be an email address"}},
		{"email", `{"subject":"Hi","text":"t","replyTo":"Support <help@example.com>"}`, nil},
		{"email", `{"subject":7,"body":"b"}`, []string{"content.subject must be a string"}},
		{"sms", `{"body":"Your code is 1234"}`, nil},
		{"sms", `{"subject":"s"}`, []string{"content.subject is not a field of sms content", "content.body is required"}},
		{"chat", `{"body":"b","blocks":[{"type":"section"}]}`, nil},
		{"chat", `{"body":"b","blocks":{}}`, []string{"content.blocks must be an array"}},
		{"push", `{"title":"t","body":"b","data":{"k":"v"}}`, nil},
		{"push", `{"title":"t","body":"b","data":{"k":1}}`, []string{"content.data must be an object of string values"}},
		{"push", `{"body":"b"}`, []string{"content.title is required"}},
		{"in_app", `{"body":"b","data":{"any":[1]},"primaryAction":{"label":"Open","url":"https://x.io"}}`, nil},
		{"in_app", `{"body":"b","primaryAction":{"label":"Open"}}`, []string{"content.primaryAction.url is required: a non-empty string"}},
		{"in_app", `{"subject":"s","body":null}`, []string{"content.body is required"}},
		{"in_app", `{"body":"b","primaryAction":{"label":"Open","url":"http://x.io/a?b=c"}}`, nil},
		{"in_app", `{"body":"b","primaryAction":{"label":"Open","url":"javascript:alert(1)"}}`, []string{"content.primaryAction.url must be an absolute http or https URL"}},
		{"in_app", `{"body":"b","primaryAction":{"label":"Open","url":"data:text/html,x"}}`, []string{"content.primaryAction.url must be an absolute http or https URL"}},
		{"in_app", `{"body":"b","primaryAction":{"label":"Open","url":"//x.io/a"}}`, []string{"content.primaryAction.url must be an absolute http or https URL"}},
		{"in_app", `{"body":"b","primaryAction":{"label":"Open","url":"https:x.io"}}`, []string{"content.primaryAction.url must be an absolute http or https URL"}},
		{"webhook", `{"data":{"orderId":42}}`, nil},
		{"webhook", `{"data":null}`, []string{"content.data is required"}},
		{"webhook", `[]`, []string{"content must be an object"}},
		{"fax", `{"anything":1}`, nil}, // no such kind: no_channel decides
	} {
		err := ValidateContent(tc.kind, json.RawMessage(tc.content))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s %s: %v", tc.kind, tc.content, err)
			}
			continue
		}
		var ve *apierr.ValidationError
		if !errors.Is(err, ErrInvalidContent) || !errors.As(err, &ve) || ve.Code != apierr.CodeInvalidContent {
			t.Errorf("%s %s: err = %v", tc.kind, tc.content, err)
			continue
		}
		var got []string
		for _, p := range ve.Problems {
			got = append(got, p.Field+" "+p.Problem)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: problems %q, want %q", tc.kind, tc.content, got, tc.want)
		}
		if c := Classify(err); c.Code != apierr.CodeInvalidContent || !c.Terminal {
			t.Errorf("Classify = %+v", c)
		}
	}
	big := json.RawMessage(`{"body":"` + strings.Repeat("x", MaxContentBytes) + `"}`)
	if err := ValidateContent("sms", big); !errors.Is(err, ErrInvalidContent) {
		t.Errorf("content over %d bytes: %v", MaxContentBytes, err)
	}
}
