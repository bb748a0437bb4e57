// Command bridge is a tenant Bridge: the HTTP endpoint Herald calls to run a
// tenant's workflows. One Bridge serves every example of the docs, each
// workflow small and showing one thing (workflows.go):
//
//   - welcome: a run step (a stand-in CRM), an e-mail, and a text message
//     instead when the subscriber has no e-mail address.
//   - approval: ask an approver by e-mail, wait up to 48 h for the
//     "approved" signal (waitForEvent), tell the requester how it went.
//   - daily_digest: a cron schedule (every day at 09:00): yesterday's
//     figures e-mailed to an operations subscriber.
//   - order_shipped: one send on every channel kind (email, sms, chat,
//     push, in_app, webhook), so the tenant needs a channel of each, or
//     names the kinds it has in the payload ("kinds":["email"]); with two
//     channels of a kind, Herald fails over from one to the next.
//   - reminder: a delay, then an in-app message.
//   - comment_digest: a digest window gathering the comments of a thread
//     into one e-mail.
//   - newsletter: a display name and description for the preference page,
//     default channels (in-app off unless the subscriber turns it on), and
//     the unsubscribe and preference links in the e-mail's footer.
//   - password_reset: a critical workflow: sent whatever the subscriber's
//     preferences, with no unsubscribe link.
//   - price_alert: a throttle: at most 3 e-mails an hour to one
//     subscriber; the runs over the limit send nothing.
//   - morning_tip: a delay until a local time: the e-mail goes when the
//     subscriber's clock next reads 09:00, in their time zone.
//   - activity_digest: a digest closed by a cron expression: the activity
//     gathered until 09:00 the subscriber's time, in one e-mail.
//   - invoice_paid: a payload schema: Herald refuses a trigger whose
//     payload does not match it (422 invalid_payload) and starts nothing.
//
// Run it with the signing secret that PUT /v1/bridge returned:
//
//	HERALD_SIGNING_SECRET=… go run ./examples/bridge
//
// and register http://127.0.0.1:4000/ as the webhookUrl (every path is served).
// BRIDGE_ADDR changes the listen address; DIGEST_RECIPIENT (default "ops") is
// the subscriber id that receives the daily digest, DIGEST_SCHEDULE (default
// "0 9 * * *") its schedule, ACTIVITY_DIGEST_CRON (default "0 9 * * *") when
// activity_digest sends.
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bridge"
)

func main() {
	secret := os.Getenv("HERALD_SIGNING_SECRET")
	if secret == "" {
		log.Fatal("HERALD_SIGNING_SECRET is required: the signingSecret that PUT /v1/bridge returned")
	}
	srv := &http.Server{
		Addr: envOr("BRIDGE_ADDR", "127.0.0.1:4000"),
		Handler: bridge.Serve(newRegistry(config{
			DigestRecipient: envOr("DIGEST_RECIPIENT", "ops"),
			DigestSchedule:  envOr("DIGEST_SCHEDULE", "0 9 * * *"),
			ActivityCron:    envOr("ACTIVITY_DIGEST_CRON", "0 9 * * *"),
		}), bridge.Options{SigningKey: secret}),
		ReadHeaderTimeout: 10 * time.Second,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Printf("bridge: serving the example workflows on http://%s/", srv.Addr)

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
