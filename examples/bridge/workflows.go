package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/bridge"
)

// config is what the environment sets (main.go).
type config struct {
	// DigestRecipient is the subscriber id the daily digest goes to,
	// DigestSchedule its cron schedule.
	DigestRecipient, DigestSchedule string
	// ActivityCron is when activity_digest sends what it gathered, read
	// in each subscriber's time zone.
	ActivityCron string
}

// newRegistry defines the workflows.
func newRegistry(cfg config) *bridge.Registry {
	return bridge.NewRegistry().MustRegister(
		// Teammates edit the welcome email's words per locale
		// (PUT /v1/workflows/welcome/controls/welcome-email?locale=fr).
		bridge.MustWorkflow("welcome", welcome, bridge.Controls("welcome-email", welcomeControls)),
		bridge.MustWorkflow("approval", approval),
		bridge.MustWorkflow("daily_digest", dailyDigest(cfg.DigestRecipient), bridge.WithSchedule(cfg.DigestSchedule)),
		bridge.MustWorkflow("order_shipped", orderShipped,
			bridge.WithName("Shipping updates"), bridge.WithDescription("When an order of yours leaves the warehouse.")),
		bridge.MustWorkflow("reminder", reminder, bridge.WithName("Reminders")),
		bridge.MustWorkflow("comment_digest", commentDigest,
			bridge.WithName("Comments"), bridge.WithDescription("New comments on your threads, gathered into one e-mail.")),
		bridge.MustWorkflow("newsletter", newsletter,
			bridge.WithName("Product newsletter"), bridge.WithDescription("What is new in Acme, once a month."),
			// A subscriber who never chose gets the e-mail but not the
			// in-app copy: they turn it on from the preference page.
			bridge.WithDefaultChannels(map[bridge.Channel]bool{bridge.InApp: false})),
		// Critical: sent whatever the subscriber's preferences say, and
		// its messages carry no unsubscribe link.
		bridge.MustWorkflow("password_reset", passwordReset, bridge.WithCritical(), bridge.WithName("Password reset")),
		bridge.MustWorkflow("price_alert", priceAlert, bridge.WithName("Price alerts")),
		bridge.MustWorkflow("morning_tip", morningTip, bridge.WithName("Tips")),
		bridge.MustWorkflow("activity_digest", activityDigest(cfg.ActivityCron), bridge.WithName("Activity digest")),
		bridge.MustWorkflow("invoice_paid", invoicePaid, bridge.WithName("Receipts"), bridge.WithPayloadSchema(invoiceSchema)),
	)
}

// profile is what the CRM knows of a subscriber.
type profile struct {
	FirstName string `json:"firstName"`
	Plan      string `json:"plan"`
}

// lookupProfile stands in for a call to a CRM or a database: I/O belongs in a
// Run step.
func lookupProfile(ctx context.Context, sub *bridge.Subscriber) (profile, error) {
	if err := ctx.Err(); err != nil {
		return profile{}, err
	}
	p := profile{FirstName: "there", Plan: "free"}
	if name, ok := sub.Attributes["firstName"].(string); ok && name != "" {
		p.FirstName = name
	}
	if plan, ok := sub.Attributes["plan"].(string); ok && plan != "" {
		p.Plan = plan
	}
	return p, nil
}

// welcomeControls are the words of the welcome email that teammates
// edit without a deploy; the defaults are what it sends until they do.
var welcomeControls = json.RawMessage(`{"type":"object","properties":{
	"subject":{"type":"string","minLength":1,"maxLength":120,"default":"Welcome to Acme"},
	"greeting":{"type":"string","minLength":1,"maxLength":60,"default":"Hi"}}}`)

func welcome(ctx *bridge.Context, _ struct{}) error {
	if ctx.Subscriber == nil {
		return errors.New("welcome needs a subscriber")
	}
	p, err := bridge.Run(ctx, "fetch-profile", func(c context.Context) (profile, error) {
		return lookupProfile(c, ctx.Subscriber)
	}, bridge.PreviewSample(profile{FirstName: "Ada", Plan: "pro"})) // what a preview shows without a run
	if err != nil {
		return err
	}
	// Notify's content type names the channel: an EmailContent is an e-mail.
	mail, err := bridge.Notify(ctx, "welcome-email", func(context.Context) (bridge.EmailContent, error) {
		var c struct{ Subject, Greeting string }
		if err := ctx.Controls("welcome-email", &c); err != nil {
			return bridge.EmailContent{}, err
		}
		return bridge.EmailContent{
			Subject: c.Subject + ", " + p.FirstName + "!",
			HTML:    fmt.Sprintf("<p>%s %s,</p><p>Your <b>%s</b> plan is ready. Reply to this e-mail if you need a hand.</p>", html.EscapeString(c.Greeting), p.FirstName, p.Plan),
			Text:    fmt.Sprintf("%s %s,\n\nYour %s plan is ready. Reply to this e-mail if you need a hand.\n", c.Greeting, p.FirstName, p.Plan),
		}, nil
	})
	if err != nil {
		return err
	}
	if !mail.Skipped() || mail.Reason != bridge.NoAddress {
		return nil // sent, or skipped because they opted out
	}
	// No e-mail address: a text instead (the tenant needs an sms channel).
	_, err = bridge.Notify(ctx, "welcome-sms", func(context.Context) (bridge.SMSContent, error) {
		return bridge.SMSContent{Body: fmt.Sprintf("Welcome to Acme, %s! Your %s plan is ready.", p.FirstName, p.Plan)}, nil
	})
	return err
}

// approvalRequest is the trigger payload of the approval workflow.
type approvalRequest struct {
	Title      string `json:"title"`
	ApproverID string `json:"approverId"`
	Timeout    string `json:"timeout"` // optional duration string, default 48h
}

// approvalDecision is the payload of the "approved" signal.
type approvalDecision struct {
	By   string `json:"by"`
	Note string `json:"note"`
}

func approval(ctx *bridge.Context, req approvalRequest) error {
	if req.ApproverID == "" || req.Title == "" {
		return errors.New("approval payload needs title and approverId")
	}
	timeout := 48 * time.Hour
	if req.Timeout != "" {
		d, err := bridge.ParseDuration(req.Timeout)
		if err != nil {
			return err
		}
		timeout = d
	}

	_, err := bridge.Send(ctx, "ask-approver", bridge.Email, func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{
			Subject: "Approval needed: " + req.Title,
			Body:    fmt.Sprintf("Please approve %q (run %s) within %s.\n", req.Title, ctx.RunID, timeout),
		}, nil
	}, bridge.To(req.ApproverID))
	if err != nil {
		return err
	}

	decision, ok, err := bridge.WaitForEvent[approvalDecision](ctx, "wait-approval", "approved", timeout)
	if err != nil {
		return err
	}
	if !ok {
		_, err = bridge.Send(ctx, "notify-expired", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{
				Subject: "No decision on " + req.Title,
				Body:    "Your request expired without an approval. Submit it again if it still matters.\n",
			}, nil
		})
		return err
	}
	_, err = bridge.Send(ctx, "notify-approved", bridge.Email, func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Approved: " + req.Title, Body: fmt.Sprintf("Approved by %s. %s\n", decision.By, decision.Note)}, nil
	})
	return err
}

// dailyStats is yesterday's activity, as the digest reports it.
type dailyStats struct {
	Day     string `json:"day"`
	Signups int    `json:"signups"`
	Orders  int    `json:"orders"`
}

// dailyDigest returns the schedule-triggered digest workflow. A cron run has
// no subscriber, so the e-mail names its recipient with bridge.To.
func dailyDigest(recipient string) func(*bridge.Context, struct{}) error {
	return func(ctx *bridge.Context, _ struct{}) error {
		stats, err := bridge.Run(ctx, "collect-stats", func(context.Context) (dailyStats, error) {
			// The clock is read inside the step, so replays see the same day.
			day := time.Now().UTC().AddDate(0, 0, -1)
			return dailyStats{Day: day.Format(time.DateOnly), Signups: 12, Orders: 34}, nil
		})
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "send-digest", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{
				Subject: "Acme daily digest for " + stats.Day,
				Body:    fmt.Sprintf("Signups: %d\nOrders: %d\n", stats.Signups, stats.Orders),
			}, nil
		}, bridge.To(recipient))
		return err
	}
}

// shipment is the trigger payload of order_shipped.
type shipment struct {
	OrderID     string `json:"orderId"`
	Carrier     string `json:"carrier"`
	TrackingURL string `json:"trackingUrl"` // optional
	// Kinds are the channel kinds to send on ("email", "in_app", …):
	// the kinds the tenant has channels of. Empty: all six.
	Kinds []bridge.Channel `json:"kinds"`
}

// orderShipped sends the news on every channel kind, one step each. Each
// kind goes to the subscriber's address of that kind (contacts.sms[0], …);
// a subscriber without one is skipped (bridge.NoAddress) and the run goes
// on. A kind the tenant has no enabled channel of fails the run
// (no_channel): a tenant without channels of all six kinds names the kinds
// it has in the payload's "kinds". With two channels of a kind (email-ses
// at priority 0, email-smtp at 1), a send that fails before the provider
// took it moves to the next one at once: failover is the channels'
// business, not the workflow's.
func orderShipped(ctx *bridge.Context, s shipment) error {
	if s.OrderID == "" {
		return errors.New("order_shipped needs an orderId")
	}
	on := func(kind bridge.Channel) bool { return len(s.Kinds) == 0 || slices.Contains(s.Kinds, kind) }
	track := s.TrackingURL
	if track == "" {
		track = "https://track.example.com/" + s.OrderID
	}
	text := fmt.Sprintf("Order %s has shipped with %s.", s.OrderID, s.Carrier)
	if on(bridge.Email) {
		if _, err := bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
			return bridge.EmailContent{Subject: "Your order " + s.OrderID + " has shipped", Text: text + "\nTrack it: " + track + "\n"}, nil
		}); err != nil {
			return err
		}
	}
	if on(bridge.SMS) {
		if _, err := bridge.Notify(ctx, "sms", func(context.Context) (bridge.SMSContent, error) {
			return bridge.SMSContent{Body: text}, nil
		}); err != nil {
			return err
		}
	}
	if on(bridge.Chat) {
		if _, err := bridge.Notify(ctx, "chat", func(context.Context) (bridge.ChatContent, error) {
			return bridge.ChatContent{Body: text}, nil
		}); err != nil {
			return err
		}
	}
	if on(bridge.Push) {
		if _, err := bridge.Notify(ctx, "push", func(context.Context) (bridge.PushContent, error) {
			return bridge.PushContent{Title: "Order shipped", Body: text, Data: map[string]string{"orderId": s.OrderID}}, nil
		}); err != nil {
			return err
		}
	}
	if on(bridge.InApp) {
		if _, err := bridge.Notify(ctx, "in-app", func(context.Context) (bridge.InAppContent, error) {
			return bridge.InAppContent{Subject: "Order shipped", Body: text,
				PrimaryAction: &bridge.InAppAction{Label: "Track", URL: track}}, nil
		}); err != nil {
			return err
		}
	}
	if !on(bridge.Webhook) {
		return nil
	}
	// A webhook send needs no address: it posts to the channel's URL
	// (your own system, say a warehouse dashboard).
	_, err := bridge.Notify(ctx, "webhook", func(context.Context) (bridge.WebhookContent, error) {
		data, err := json.Marshal(map[string]string{"orderId": s.OrderID, "carrier": s.Carrier})
		return bridge.WebhookContent{Data: data}, err
	})
	return err
}

// reminderRequest is the trigger payload of reminder.
type reminderRequest struct {
	Text  string `json:"text"`
	After string `json:"after"` // a duration ("30m", "1d"); default 1h
}

// reminder sleeps, then drops a message in the subscriber's in-app inbox.
// While the run sleeps no code of yours runs: Herald wakes it up, after a
// restart too.
func reminder(ctx *bridge.Context, r reminderRequest) error {
	after := time.Hour
	if r.After != "" {
		d, err := bridge.ParseDuration(r.After)
		if err != nil {
			return err
		}
		after = d
	}
	if err := bridge.Delay(ctx, "wait", after); err != nil {
		return err
	}
	_, err := bridge.Notify(ctx, "remind", func(context.Context) (bridge.InAppContent, error) {
		return bridge.InAppContent{Subject: "Reminder", Body: r.Text}, nil
	})
	return err
}

// comment is the trigger payload of comment_digest.
type comment struct {
	Thread string `json:"thread"`
	Author string `json:"author"`
	Text   string `json:"text"`
	Window string `json:"window"` // how long to gather; default 10m
}

// commentDigest gathers the comments of one thread that reach the digest
// step within the window into one e-mail. The run that opens the window
// sends it; the runs that join end at the digest step (status digested).
func commentDigest(ctx *bridge.Context, c comment) error {
	window := 10 * time.Minute
	if c.Window != "" {
		d, err := bridge.ParseDuration(c.Window)
		if err != nil {
			return err
		}
		window = d
	}
	got, err := bridge.Digest(ctx, "gather", window, bridge.DigestKey(c.Thread))
	if err != nil {
		return err
	}
	var lines []string
	for _, ev := range got.Events {
		lines = append(lines, fmt.Sprintf("%v: %v", ev.Payload["author"], ev.Payload["text"]))
	}
	_, err = bridge.Notify(ctx, "send", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{
			Subject: fmt.Sprintf("%d new comments on %s", got.Count, c.Thread),
			Text:    strings.Join(lines, "\n") + "\n",
		}, nil
	})
	return err
}

// issue is the trigger payload of newsletter.
type issue struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// newsletter e-mails an issue with the subscriber's links in the footer
// (Context.Links, when Herald runs with HERALD_PUBLIC_URL), and an in-app
// copy that is off by default (see newRegistry).
func newsletter(ctx *bridge.Context, is issue) error {
	if _, err := bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{Subject: is.Title, Text: is.Body + "\n" + footer(ctx.Links)}, nil
	}); err != nil {
		return err
	}
	_, err := bridge.Notify(ctx, "in-app", func(context.Context) (bridge.InAppContent, error) {
		return bridge.InAppContent{Subject: is.Title, Body: is.Body}, nil
	})
	return err
}

// passwordReset e-mails a reset link. It is critical: the footer has the
// preference page link but no unsubscribe link (Links.Unsubscribe is nil).
func passwordReset(ctx *bridge.Context, req struct {
	ResetURL string `json:"resetUrl"`
}) error {
	_, err := bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{Subject: "Reset your password",
			Text: "Open " + req.ResetURL + " within an hour to choose a new password.\n" + footer(ctx.Links)}, nil
	})
	return err
}

// footer is the links part of a message: empty when Herald gives none (it
// runs without a public URL, or the run has no subscriber). A link may
// differ from one execution to the next: use it in content only, never
// branch on it.
func footer(l *bridge.Links) string {
	if l == nil {
		return ""
	}
	s := "\n--\nYour notification preferences: " + l.Preferences + "\n"
	if l.Unsubscribe != nil {
		s += "Unsubscribe from these e-mails: " + *l.Unsubscribe + "\n"
	}
	return s
}

// priceDrop is the trigger payload of price_alert.
type priceDrop struct {
	Product string `json:"product"`
	Price   string `json:"price"`
}

// priceAlert e-mails a price drop, at most 3 an hour to one subscriber. The
// throttle step counts the runs of this workflow for the subscriber that
// reached it within the last hour, this one included (Herald keeps the
// count: it survives restarts and is shared by every herald process); a run
// over the limit ends there, sending nothing.
func priceAlert(ctx *bridge.Context, p priceDrop) error {
	t, err := bridge.Throttle(ctx, "at-most-3-an-hour", 3, time.Hour)
	if err != nil || t.Throttled {
		return err
	}
	_, err = bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{Subject: "Price drop: " + p.Product + " now " + p.Price,
			Text: fmt.Sprintf("%s is down to %s.\n", p.Product, p.Price)}, nil
	})
	return err
}

// tip is the trigger payload of morning_tip.
type tip struct {
	Text string `json:"text"`
	At   string `json:"at"` // the subscriber's local time to send it at, "HH:MM"; default 09:00
}

// morningTip waits until the subscriber's clock next reads 09:00, in the
// time zone of their profile (UTC without one), then e-mails the tip. Herald
// picks the instant when the run reaches the delay and records it, so a
// replay or a restart never moves it.
func morningTip(ctx *bridge.Context, t tip) error {
	if err := bridge.DelayUntilLocal(ctx, "until-morning", cmp.Or(t.At, "09:00")); err != nil {
		return err
	}
	_, err := bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{Subject: "Your tip for today", Text: t.Text + "\n"}, nil
	})
	return err
}

// activity is the trigger payload of activity_digest.
type activity struct {
	Actor  string `json:"actor"`
	Action string `json:"action"`
}

// activityDigest returns the workflow that gathers a subscriber's activity
// into one e-mail at the next tick of cron ("0 9 * * *": every morning at
// 9), read in the subscriber's time zone. The run that opens the window
// sends it; the runs that join end at the digest step (status digested).
func activityDigest(cron string) func(*bridge.Context, activity) error {
	return func(ctx *bridge.Context, _ activity) error {
		got, err := bridge.Digest(ctx, "gather", 0, bridge.DigestCron(cron))
		if err != nil {
			return err
		}
		var lines []string
		for _, ev := range got.Events {
			lines = append(lines, fmt.Sprintf("%v %v", ev.Payload["actor"], ev.Payload["action"]))
		}
		_, err = bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
			return bridge.EmailContent{
				Subject: fmt.Sprintf("Your activity digest: %d updates", got.Count),
				Text:    strings.Join(lines, "\n") + "\n",
			}, nil
		})
		return err
	}
}

// invoiceSchema is the payload schema of invoice_paid. After a sync Herald
// checks every trigger of the workflow against it: a payload it refuses is
// answered 422 invalid_payload, naming each bad field, and starts nothing.
var invoiceSchema = json.RawMessage(`{
  "type": "object",
  "required": ["invoiceId", "amount", "currency"],
  "properties": {
    "invoiceId": {"type": "string", "minLength": 1},
    "amount": {"type": "number", "exclusiveMinimum": 0},
    "currency": {"enum": ["EUR", "GBP", "USD"]}
  },
  "additionalProperties": false
}`)

// invoice is the trigger payload of invoice_paid, as invoiceSchema has it.
type invoice struct {
	InvoiceID string  `json:"invoiceId"`
	Amount    float64 `json:"amount"`
	Currency  string  `json:"currency"`
}

// invoicePaid e-mails a receipt. It trusts its payload's shape: Herald
// refused every trigger whose payload does not match invoiceSchema.
func invoicePaid(ctx *bridge.Context, inv invoice) error {
	_, err := bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{
			Subject: fmt.Sprintf("Receipt for invoice %s", inv.InvoiceID),
			Text:    fmt.Sprintf("We received %.2f %s for invoice %s. Thank you.\n", inv.Amount, inv.Currency, inv.InvoiceID),
		}, nil
	})
	return err
}
