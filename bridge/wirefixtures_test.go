package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

// The shared wire fixtures of testdata/wire (see its README.md): each is a
// request to a Bridge serving the named workflows and the answer expected.
// The TypeScript SDK's test (sdk/typescript/test/fixtures.test.ts) runs the
// same files against the same workflows, defined there alike, so that the
// two SDKs answer every request the same way.

// fixtureSecret signs every fixture request ("{{sign}}").
const fixtureSecret = "whsec_fixture"

// wireFixture is one file of testdata/wire.
type wireFixture struct {
	Description string   `json:"description"`
	Now         int64    `json:"now"`
	Workflows   []string `json:"workflows"`
	Request     struct {
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
		RawBody *string           `json:"rawBody"`
	} `json:"request"`
	Repeat int             `json:"repeat"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// fixtureWorkflows are the workflows the fixtures name, as the TypeScript
// test defines them.
func fixtureWorkflows() map[string]*Workflow {
	type confirmation struct {
		By string `json:"by"`
	}
	steps := MustWorkflow("fx_steps", func(ctx *Context, _ map[string]any) error {
		user, err := Run(ctx, "load", func(context.Context) (map[string]string, error) {
			return map[string]string{"name": "Ada"}, nil
		})
		if err != nil {
			return err
		}
		if err := Delay(ctx, "pause", 30*time.Second); err != nil {
			return err
		}
		c, ok, err := WaitForEvent[confirmation](ctx, "confirm", "confirmed", time.Hour)
		if err != nil {
			return err
		}
		body := "Nobody confirmed."
		if ok {
			body = "Confirmed by " + c.By + "."
		}
		if _, err := Send(ctx, "mail", Email, func(context.Context) (SendContent, error) {
			return SendContent{Subject: "Hi " + user["name"], Body: body}, nil
		}); err != nil {
			return err
		}
		_, err = Digest(ctx, "batch", 10*time.Minute, DigestKey("k"))
		return err
	})
	schedule := MustWorkflow("fx_schedule", func(*Context, struct{}) error { return nil },
		WithSchedule("0 9 * * *"), WithCritical(),
		WithDefaultChannels(map[Channel]bool{Email: false, SMS: true}),
		WithPayloadSchema(json.RawMessage(`{"type":"object","required":["plan"]}`)))
	kinds := MustWorkflow("fx_kinds", func(ctx *Context, _ struct{}) error {
		if _, err := Notify(ctx, "sms", func(context.Context) (SMSContent, error) {
			return SMSContent{Body: "Your code is 1234"}, nil
		}, To("u2")); err != nil {
			return err
		}
		if _, err := Notify(ctx, "chat", func(context.Context) (ChatContent, error) {
			return ChatContent{Body: "Deploy done", Blocks: json.RawMessage(`[{"type":"section","text":{"type":"mrkdwn","text":"*Deploy* done"}}]`)}, nil
		}); err != nil {
			return err
		}
		if _, err := Notify(ctx, "push", func(context.Context) (PushContent, error) {
			return PushContent{Title: "Order shipped", Body: "Arrives Tuesday", Data: map[string]string{"orderId": "o1"}}, nil
		}); err != nil {
			return err
		}
		if _, err := Notify(ctx, "inbox", func(context.Context) (InAppContent, error) {
			return InAppContent{Subject: "Invoice", Body: "Your invoice is ready", PrimaryAction: &InAppAction{Label: "Open", URL: "https://example.com/i/1"}}, nil
		}); err != nil {
			return err
		}
		_, err := Notify(ctx, "hook", func(context.Context) (WebhookContent, error) {
			return WebhookContent{Data: json.RawMessage(`{"event":"invoice.ready","id":1}`)}, nil
		})
		return err
	})
	timed := MustWorkflow("fx_time", func(ctx *Context, _ struct{}) error {
		if err := DelayUntil(ctx, "until", time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)); err != nil {
			return err
		}
		if err := DelayUntilLocal(ctx, "morning", "09:00"); err != nil {
			return err
		}
		_, err := Digest(ctx, "weekday", 0, DigestCron("0 9 * * 1-5"))
		return err
	})
	throttle := MustWorkflow("fx_throttle", func(ctx *Context, p struct {
		Key string `json:"key"`
	}) error {
		t, err := Throttle(ctx, "cap", 3, time.Hour, ThrottleKey(p.Key))
		if err != nil || t.Throttled {
			return err
		}
		_, err = Notify(ctx, "mail", func(context.Context) (EmailContent, error) {
			return EmailContent{Subject: "Not throttled"}, nil
		})
		return err
	})
	// fx_args calls a step with the invalid arguments its payload names.
	args := MustWorkflow("fx_args", func(ctx *Context, p struct {
		Case string `json:"case"`
	}) error {
		var err error
		switch p.Case {
		case "limit":
			_, err = Throttle(ctx, "bad", 0, time.Hour)
		case "window":
			_, err = Throttle(ctx, "bad", 3, 32*24*time.Hour)
		case "localTime":
			err = DelayUntilLocal(ctx, "bad", "9am")
		case "cronAndWindow":
			_, err = Digest(ctx, "bad", time.Minute, DigestCron("@daily"))
		case "emptyCron":
			_, err = Digest(ctx, "bad", 0, DigestCron(" "))
		}
		return err
	})
	named := MustWorkflow("fx_named", func(*Context, struct{}) error { return nil },
		WithName("Weekly digest"), WithDescription("What happened in your projects this week, on Monday at 9."))
	zone := MustWorkflow("fx_zone", func(ctx *Context, _ struct{}) error {
		res, err := Notify(ctx, "mail", func(context.Context) (EmailContent, error) {
			return EmailContent{Subject: "Hi"}, nil
		})
		if err != nil {
			return err
		}
		_, err = Run(ctx, "seen", func(context.Context) (map[string]any, error) {
			tz := ""
			if ctx.Subscriber != nil {
				tz = ctx.Subscriber.Timezone
			}
			return map[string]any{"timezone": tz, "heldUntil": res.HeldUntil}, nil
		})
		return err
	})
	dup := MustWorkflow("fx_dup", func(ctx *Context, _ struct{}) error {
		if _, err := Run(ctx, "a", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return err
		}
		_, err := Run(ctx, "a", func(context.Context) (int, error) { return 2, nil })
		return err
	})
	throws := MustWorkflow("fx_throws", func(ctx *Context, _ struct{}) error {
		if ctx.Subscriber == nil {
			return errors.New("fx_throws needs a subscriber")
		}
		if _, err := Run(ctx, "ok", func(context.Context) (any, error) { return nil, nil }); err != nil {
			return err
		}
		_, err := Run(ctx, "explode", func(context.Context) (any, error) { return nil, errors.New("boom") })
		return err
	})
	invalid := MustWorkflow("fx_invalid", func(ctx *Context, _ struct{}) error {
		_, _, err := WaitForEvent[any](ctx, "wait", "", 0)
		return err
	})
	// fx_untouched fails in every step body: a check, which runs none,
	// goes through it.
	untouched := MustWorkflow("fx_untouched", func(ctx *Context, _ struct{}) error {
		if _, err := Run(ctx, "body", func(context.Context) (any, error) { return nil, errors.New("the body ran") }); err != nil {
			return err
		}
		_, err := Notify(ctx, "mail", func(context.Context) (EmailContent, error) {
			return EmailContent{}, errors.New("the content ran")
		})
		return err
	})
	controls := MustWorkflow("fx_controls", func(ctx *Context, _ struct{}) error {
		_, err := Notify(ctx, "welcome", func(context.Context) (EmailContent, error) {
			var c struct{ Subject, Greeting string }
			if err := ctx.Controls("welcome", &c); err != nil {
				return EmailContent{}, err
			}
			return EmailContent{Subject: c.Subject, Body: c.Greeting + " (" + ctx.Locale + ")"}, nil
		})
		return err
	}, Controls("welcome", json.RawMessage(`{"type":"object","properties":{"subject":{"type":"string","default":"Welcome"},"greeting":{"type":"string","default":"Hello"}}}`)))
	// fx_preview's step bodies fail: a preview runs none of them.
	preview := MustWorkflow("fx_preview", func(ctx *Context, _ struct{}) error {
		user, err := Run(ctx, "load", func(context.Context) (map[string]string, error) {
			return nil, errors.New("the body of load ran")
		}, PreviewSample(map[string]string{"name": "Sample"}))
		if err != nil {
			return err
		}
		if err := Delay(ctx, "pause", 30*time.Second); err != nil {
			return err
		}
		if _, err := Notify(ctx, "welcome", func(context.Context) (EmailContent, error) {
			var c struct{ Subject string }
			if err := ctx.Controls("welcome", &c); err != nil {
				return EmailContent{}, err
			}
			return EmailContent{Subject: c.Subject + " " + user["name"], HTML: "<p>Hi</p>", Layout: LayoutID("brand")}, nil
		}); err != nil {
			return err
		}
		if _, err := Run(ctx, "audit", func(context.Context) (int, error) {
			return 0, errors.New("the body of audit ran")
		}); err != nil {
			return err
		}
		_, err = Notify(ctx, "sms", func(context.Context) (SMSContent, error) {
			return SMSContent{Body: "Hi " + user["name"]}, nil
		})
		return err
	}, Controls("welcome", json.RawMessage(`{"type":"object","properties":{"subject":{"type":"string","default":"Welcome"}}}`)))
	out := map[string]*Workflow{}
	for _, w := range []*Workflow{steps, schedule, kinds, timed, throttle, args, named, zone, dup, throws, invalid, untouched, controls, preview} {
		out[w.ID()] = w
	}
	return out
}

func TestWireFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "wire", "*.json"))
	if err != nil || len(files) < 30 {
		t.Fatalf("fixtures: %d files, %v", len(files), err)
	}
	workflows := fixtureWorkflows()
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var fx wireFixture
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&fx); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			reg := NewRegistry()
			for _, id := range fx.Workflows {
				w, ok := workflows[id]
				if !ok {
					t.Fatalf("no fixture workflow %q", id)
				}
				reg.MustRegister(w)
			}
			h := Serve(reg, Options{SigningKey: fixtureSecret, Now: func() time.Time { return time.Unix(fx.Now, 0) }})
			body := fixtureBody(t, &fx)
			var rec *httptest.ResponseRecorder
			for range fx.Repeat + 1 {
				req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				for k, v := range fx.Request.Headers {
					req.Header.Set(k, fixtureHeader(v, fx.Request.Headers[wire.HeaderTimestamp], body))
				}
				rec = httptest.NewRecorder()
				h.ServeHTTP(rec, req)
			}
			if rec.Code != fx.Status {
				t.Fatalf("%s: status %d, want %d: %s", fx.Description, rec.Code, fx.Status, rec.Body)
			}
			var got, want any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer %q: %v", rec.Body, err)
			}
			if err := json.Unmarshal(fx.Body, &want); err != nil {
				t.Fatal(err)
			}
			dropUnspecifiedMessage(got, want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\n got %s\nwant %s", fx.Description, rec.Body, fx.Body)
			}
		})
	}
}

// fixtureBody is the raw body a fixture sends: rawBody as it is, or body
// in compact form.
func fixtureBody(t *testing.T, fx *wireFixture) []byte {
	if fx.Request.RawBody != nil {
		return []byte(*fx.Request.RawBody)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, fx.Request.Body); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fixtureHeader replaces the signature placeholders of a header value:
// {{sign}} is the signature with fixtureSecret, {{sign:S}} with secret S.
func fixtureHeader(v, timestamp string, body []byte) string {
	secret, ok := strings.CutPrefix(v, "{{sign")
	if !ok {
		return v
	}
	secret = strings.TrimSuffix(strings.TrimPrefix(secret, ":"), "}}")
	if secret == "" {
		secret = fixtureSecret
	}
	ts, _ := strconv.ParseInt(timestamp, 10, 64)
	return wire.Sign(secret, ts, body)
}

// dropUnspecifiedMessage removes the answer's error message when the
// fixture's error has none: a message that is a parser's own words.
func dropUnspecifiedMessage(got, want any) {
	g, _ := got.(map[string]any)
	w, _ := want.(map[string]any)
	ge, _ := g["error"].(map[string]any)
	we, _ := w["error"].(map[string]any)
	if ge != nil && we != nil {
		if _, ok := we["message"]; !ok {
			delete(ge, "message")
		}
	}
}

// TestWorkflowTextFixture runs testdata/workflow-text.json, the bounds of
// a workflow's display text, which the TypeScript SDK's test runs too:
// both refuse the same text with the same error.
func TestWorkflowTextFixture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "workflow-text.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Description string `json:"description"`
		Cases       []struct {
			Case  string  `json:"case"`
			Field string  `json:"field"`
			Text  string  `json:"text"`
			Times int     `json:"times"`
			Error *string `json:"error"`
		} `json:"cases"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil || len(fx.Cases) == 0 {
		t.Fatalf("workflow-text.json: %d cases, %v", len(fx.Cases), err)
	}
	for _, c := range fx.Cases {
		text := strings.Repeat(c.Text, c.Times)
		var opt WorkflowOption
		switch c.Field {
		case "name":
			opt = WithName(text)
		case "description":
			opt = WithDescription(text)
		default:
			t.Fatalf("%s: unknown field %q", c.Case, c.Field)
		}
		_, err := NewWorkflow("fx_text", func(*Context, struct{}) error { return nil }, opt)
		switch {
		case c.Error == nil && err != nil:
			t.Errorf("%s: %v", c.Case, err)
		case c.Error != nil && (err == nil || err.Error() != *c.Error):
			t.Errorf("%s: error %v, want %s", c.Case, err, *c.Error)
		case c.Error != nil && !errors.Is(err, ErrInvalidWorkflow):
			t.Errorf("%s: %v is not ErrInvalidWorkflow", c.Case, err)
		}
	}
}

// TestControlSchemasFixture runs testdata/control-schemas.json, the
// control schemas a workflow may declare, which the TypeScript SDK's test
// runs too: both refuse the same schema with the same error.
func TestControlSchemasFixture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "control-schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Description string `json:"description"`
		Cases       []struct {
			Case   string          `json:"case"`
			StepID string          `json:"stepId"`
			Schema json.RawMessage `json:"schema"`
			Error  *string         `json:"error"`
		} `json:"cases"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil || len(fx.Cases) == 0 {
		t.Fatalf("control-schemas.json: %d cases, %v", len(fx.Cases), err)
	}
	for _, c := range fx.Cases {
		_, err := NewWorkflow("fx_ctl", func(*Context, struct{}) error { return nil }, Controls(c.StepID, c.Schema))
		switch {
		case c.Error == nil && err != nil:
			t.Errorf("%s: %v", c.Case, err)
		case c.Error != nil && (err == nil || err.Error() != *c.Error):
			t.Errorf("%s: error %v, want %s", c.Case, err, *c.Error)
		case c.Error != nil && !errors.Is(err, ErrInvalidWorkflow):
			t.Errorf("%s: %v is not ErrInvalidWorkflow", c.Case, err)
		}
	}
}
