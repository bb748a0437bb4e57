// Command bridge is a small tenant Bridge: the HTTP endpoint Herald calls to
// run a tenant's workflows. It serves three of them:
//
//   - welcome: look the subscriber up in a (stand-in) CRM, e-mail them, and
//     text them instead when they have no e-mail address.
//   - approval: ask an approver by e-mail, wait up to 48 h for the "approved"
//     signal, and tell the requester how it went.
//   - daily_digest: every day at 09:00, gather yesterday's figures and e-mail
//     them to an operations subscriber.
//
// Run it with the signing secret that PUT /v1/bridge returned:
//
//	HERALD_SIGNING_SECRET=… go run ./examples/bridge
//
// and register http://127.0.0.1:4000/ as the webhookUrl (every path is served).
// BRIDGE_ADDR changes the listen address; DIGEST_RECIPIENT (default "ops") is
// the subscriber id that receives the daily digest.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
)

func main() {
	secret := os.Getenv("HERALD_SIGNING_SECRET")
	if secret == "" {
		log.Fatal("HERALD_SIGNING_SECRET is required: the signingSecret that PUT /v1/bridge returned")
	}
	srv := &http.Server{
		Addr:              envOr("BRIDGE_ADDR", "127.0.0.1:4000"),
		Handler:           bridge.Serve(newRegistry(envOr("DIGEST_RECIPIENT", "ops")), bridge.Options{SigningKey: secret}),
		ReadHeaderTimeout: 10 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Printf("bridge: serving welcome, approval and daily_digest on http://%s/", srv.Addr)

	select {
	case err := <-served:
		log.Fatal(err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Fatal(err)
	}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// newRegistry defines the workflows; digestRecipient is the subscriber id the
// daily digest goes to.
func newRegistry(digestRecipient string) *bridge.Registry {
	return bridge.NewRegistry().MustRegister(
		bridge.MustWorkflow("welcome", welcome),
		bridge.MustWorkflow("approval", approval),
		bridge.MustWorkflow("daily_digest", dailyDigest(digestRecipient), bridge.WithSchedule("0 9 * * *")),
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

func welcome(ctx *bridge.Context, _ struct{}) error {
	if ctx.Subscriber == nil {
		return errors.New("welcome needs a subscriber")
	}
	p, err := bridge.Run(ctx, "fetch-profile", func(c context.Context) (profile, error) {
		return lookupProfile(c, ctx.Subscriber)
	})
	if err != nil {
		return err
	}
	// Notify's content type names the channel: an EmailContent is an e-mail.
	mail, err := bridge.Notify(ctx, "welcome-email", func(context.Context) (bridge.EmailContent, error) {
		return bridge.EmailContent{
			Subject: "Welcome to Acme, " + p.FirstName + "!",
			HTML:    fmt.Sprintf("<p>Hi %s,</p><p>Your <b>%s</b> plan is ready. Reply to this e-mail if you need a hand.</p>", p.FirstName, p.Plan),
			Text:    fmt.Sprintf("Hi %s,\n\nYour %s plan is ready. Reply to this e-mail if you need a hand.\n", p.FirstName, p.Plan),
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
		d, err := wire.ParseDuration(req.Timeout)
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
