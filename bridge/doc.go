// Package bridge is the Go SDK of a Herald Bridge.
//
// A Bridge is one HTTP endpoint in the tenant's own code. Herald holds the
// durable state of every run; it calls the Bridge, signed, each time a run
// must advance, and the Bridge runs the workflow function from the top,
// replaying the steps already recorded, until it reaches the next one. The
// package imports nothing but the standard library and its own wire package.
//
// # Basics
//
// Define workflows with [NewWorkflow] (or [MustWorkflow]), collect them in a
// [Registry], and mount the handler of [Serve] on one route. The workflow
// function receives the trigger payload decoded into the type of its second
// parameter:
//
//	type signup struct {
//		Plan string `json:"plan"`
//	}
//
//	welcome := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, p signup) error {
//		name, err := bridge.Run(ctx, "fetch-name", func(c context.Context) (string, error) {
//			return crm.DisplayName(c, ctx.Subscriber.SubscriberID)
//		})
//		if err != nil {
//			return err
//		}
//		_, err = bridge.Send(ctx, "welcome-email", bridge.Email, func(c context.Context) (bridge.SendContent, error) {
//			return bridge.SendContent{Subject: "Welcome, " + name, Body: "Your " + p.Plan + " plan is ready."}, nil
//		})
//		return err
//	})
//	reg := bridge.NewRegistry().MustRegister(welcome)
//	http.Handle("/herald", bridge.Serve(reg, bridge.Options{SigningKey: os.Getenv("HERALD_SIGNING_SECRET")}))
//
// The steps are [Run] (tenant code, result recorded), [Send] and [Notify]
// (the service delivers a message on a [Channel] kind such as [Email]), [Delay] and
// [DelayUntil] (the run sleeps), [DelayUntilLocal] (until a time of the
// subscriber's day, in its time zone), [WaitForEvent] (the run waits for a signal,
// whose payload it decodes), [Digest] (runs are batched over a window,
// per [DigestKey] when given, or until a schedule's instant with
// [DigestCron]) and [Throttle] (runs are counted over a
// window, per [ThrottleKey] when given). Each has a step id, unique within the
// workflow, that names its recorded result. [ParseDuration] reads a
// duration a payload carries as the service writes them ("1d", "2h30m").
//
// # Packages
//
// A workflow author imports this package, and bridge/bridgetest in tests;
// the types a workflow reads and builds (contents, results, the
// subscriber) are declared here, as aliases of the protocol's shapes.
// Package bridge/wire is the protocol itself (the request and answer
// shapes, signing): for the service's own client, for another SDK, and
// for a test that plays the service's side of a request. An ordinary
// workflow never imports it.
//
// # Sending
//
// [Notify] takes the content of a channel kind in full, and the content's
// type names the channel: an [EmailContent] (subject, html and text, a
// reply-to) is an email, an [SMSContent] a text message, and so on with
// [ChatContent], [PushContent], [InAppContent] and [WebhookContent]. A
// content of the wrong kind does not compile. [Send] is the short form for
// a subject and a body on any kind that has them.
//
//	res, err := bridge.Notify(ctx, "shipped-sms", func(context.Context) (bridge.SMSContent, error) {
//		return bridge.SMSContent{Body: "Your order is on its way."}, nil
//	})
//	if err != nil {
//		return err
//	}
//	if res.Skipped() && res.Reason == bridge.NoAddress {
//		// no phone number: e-mail instead
//	}
//
// A send the service skips (the recipient has no address of the kind,
// opted out, or is suppressed) completes its step: [SendResult.Skipped]
// reports it and its Reason is [NoAddress], [Preference] or [Suppressed].
// The run goes on.
//
// Subscribers' preferences decide which sends go out. A workflow declares
// how they apply to it: [WithCritical] makes its sends go out whatever the
// subscriber chose (a password reset), [WithDefaultChannels] sets the
// kinds a subscriber who chose nothing receives. When the service has a
// public URL, [Context.Links] carries the subscriber's unsubscribe and
// preference page links for the workflow, to put in a message's footer.
//
// # Controls, translations and preview
//
// A step's words can be controls that the tenant's teammates edit per
// locale through the service, without a deploy: declare a JSON Schema per
// step with [Controls] (type object, each property with a default) and
// read the values with [Context.Controls] in the step's render function.
// The service resolves them when a run starts (the defaults, the tenant's
// default content, the subscriber's language, its exact locale, in
// [Context.Locale]) and sends the same values on every execution of the
// run. An email's [EmailContent.Layout] picks one of the tenant's layouts
// ([LayoutID], [NoLayout]). A preview (the service's POST
// /v1/workflows/{id}/preview) runs no step body but the previewed step's
// render function: a [Run] step before it returns its recorded output, or
// the sample [PreviewSample] declares.
//
// # Steps and replay
//
// A step whose id is among the run's completed steps returns its recorded
// output without running anything. The first step that is not ends the
// execution: Run executes its callback, the others describe what the service
// must do, and the handler answers with that step. So a workflow function
// sees each step "return" several times over the life of a run, and only the
// first time does anything happen.
//
// The ending step returns [ErrSuspended]; a failure (a callback error or
// panic, invalid arguments, a step id used twice, a departure from the
// history) comes back as another error. Whenever a step returns a non-nil
// error the workflow function should return it at once:
//
//	v, err := bridge.Run(ctx, "a", fetch)
//	if err != nil {
//		return err
//	}
//
// This is an error-unwinding design, not a panic: the step records the answer
// in the Context before returning the error, and the handler answers from
// that record, not from what the function returns. A function that swallows
// the error therefore cannot change the answer: every later step call returns
// the same error without effect, and the handler still answers with the
// step, or the failure, that ended the execution. What the function does
// between swallowing the error and returning is wasted work, and a side
// effect there is a bug.
//
// A callback (of Run, or Send's render) that returns an error or panics
// answers 500 with its step id;
// the service retries the step with backoff. Run callbacks therefore run at
// least once, usually exactly once: make their side effects idempotent, for
// example by keying them on [Context.RunID] and the step id.
//
// # Determinism
//
// Because the function is re-run from the top for every step, it must take
// the same path through its steps every time, given the same payload,
// subscriber and recorded outputs. The service sends the same subscriber
// on every call of a run, as it was at the run's start, so an edit of the
// subscriber in the middle of a run does not change its path. Like a
// Temporal workflow:
//
//   - Do I/O only inside [Run] callbacks (HTTP, databases, files, queues,
//     random numbers). The [Context] is not a context.Context for this reason;
//     the callback gets the request's context.
//   - Do not read the clock outside a step: time.Now() differs on every
//     execution. Return it from a Run step if the workflow needs it.
//   - Do not branch on map iteration order, on goroutine scheduling, or on
//     global state that changes between executions.
//   - Branch only on the payload, the subscriber, and step results.
//   - Call steps one at a time, from the workflow function's goroutine, never
//     from inside another step's callback.
//   - Give each step a fixed, unique id. An id built in a loop must be
//     derived from loop data that replays identically ("notify-" + userID).
//   - Changing a workflow while runs are in flight is safe when the change
//     only appends steps after the ones those runs completed, or alters code
//     that runs after them. Reordering, renaming, removing or retyping a
//     completed step makes those runs fail as nondeterministic; deploy such
//     a change under a new workflow id instead.
//
// The handler checks the rules it can: a step called with a recorded id but
// another type, a step called where the history has another one, or a
// function that returns before replaying every recorded step answers 422
// nondeterministic ([ErrNondeterministic]), with a message that names the
// step's position and both sides:
//
//	nondeterministic workflow: step 2 was "send-email" (send) in the history, the code asked for "load-user" (run)
//
// Two steps of one execution with one id answer 422 duplicate_step_id
// ([ErrDuplicateStepID]). The service fails the run on either.
//
// # Testing
//
// Package bridge/bridgetest replays a workflow against a recorded history
// (the body of an execute request the Bridge received) in a unit test and
// reports the first departure with the message above, before a deploy can
// fail runs in flight. [Serve] answers the same replay over the wire: a
// request with the action "check" (an execute request's fields) replays the
// recorded steps, runs no step body (no Run callback, no content
// function) and names the next step by id and type, or answers completed;
// the service sends it to a preview deploy against every run in flight
// (herald check).
//
// # Signing
//
// Every request carries x-svc-timestamp (unix seconds) and x-svc-signature,
// the lowercase hex HMAC-SHA256 of timestamp + "." + raw body keyed with the
// signing secret. [Serve] verifies it against the raw body before parsing
// anything and refuses a missing, wrong, or stale signature (more than
// [Options.Tolerance] from its clock, either way) with 401. During a secret
// rotation, list the previous secret in [Options.SigningKeys]. Package
// bridge/wire holds the two halves, wire.Sign and wire.Verify, with the
// protocol's JSON shapes, for other uses.
//
// # Caveats
//
//   - A Bridge must run the same code in every instance behind its URL; a
//     rolling deploy that changes completed steps breaks determinism for
//     in-flight runs.
//   - The request body is read whole (up to [Options.MaxBodyBytes]) before
//     the signature is checked. Histories with large outputs make larger
//     requests: keep Run results small and store bulky data elsewhere.
//   - A Run result, a payload and a signal's payload are JSON: they decode
//     into their Go type on every execution, so unexported fields are lost
//     and numbers in an any come back as float64.
package bridge
