package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

// Run is a step that runs fn, the only place where a workflow may do I/O or
// read the clock, and records its result, which must encode as JSON. fn
// receives the request's context and runs at most once per run when all
// goes well, at least once when it does not (its side effects should be
// idempotent). When fn returns an error or panics, the execution answers 500
// with the step id and the service retries the step later.
//
// On replay Run decodes the recorded result into T; a result that no longer
// decodes is [ErrNondeterministic].
//
// In a preview (POST /v1/workflows/{id}/preview) fn never runs: Run
// returns the output the previewed run recorded, or the sample that
// [PreviewSample] declares; with neither, the preview answers that it
// needs one (422 preview_needs_sample naming stepID).
func Run[T any](ctx *Context, stepID string, fn func(context.Context) (T, error), opts ...RunOption) (T, error) {
	var zero T
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	rec, err := ctx.beginWith(stepID, wire.StepRun, o.sample)
	if err != nil {
		return zero, err
	}
	if rec != nil {
		var v T
		if err := json.Unmarshal(orNull(rec.Output), &v); err != nil {
			return zero, ctx.fail(fmt.Errorf("%w: step %d %q (run) recorded an output that does not decode as %T: %v",
				ErrNondeterministic, ctx.calls, stepID, v, err))
		}
		return v, nil
	}
	if fn == nil {
		return zero, ctx.invalid(stepID, "nil callback")
	}
	v, err := callback(ctx, stepID, func() (T, error) { return fn(ctx.ctx) })
	if err != nil {
		return zero, err
	}
	out, err := wire.Marshal(v)
	if err != nil {
		return zero, ctx.fail(&StepError{StepID: stepID, Err: fmt.Errorf("output does not encode as JSON: %w", err)})
	}
	return zero, ctx.answer(wire.Step{StepID: stepID, Type: wire.StepRun, Output: out})
}

// RunOption configures a [Run] step.
type RunOption func(*runOptions)

type runOptions struct{ sample json.RawMessage }

// PreviewSample declares the output a [Run] step stands for in a preview
// that has no recorded output of it: sample, encoded as JSON as the step's
// result would be (a value that does not encode declares none).
func PreviewSample(sample any) RunOption {
	return func(o *runOptions) {
		if raw, err := wire.Marshal(sample); err == nil {
			o.sample = raw
		}
	}
}

// SendOption configures a [Send] step.
type SendOption func(*sendOptions)

type sendOptions struct{ to *string }

// To sends to subscriberID, any subscriber of the tenant, instead of the run's
// subscriber. It is how a schedule-triggered run, which has no subscriber,
// sends at all.
func To(subscriberID string) SendOption {
	return func(o *sendOptions) { o.to = &subscriberID }
}

// Send is a step that has the service deliver a message on channel, a
// channel kind such as [Email], to the run's subscriber (or the one named by
// [To]). render builds the content, a subject and a body, and receives the
// request's context; it is called only when the step is described, never on
// replay, so it may do I/O (load a template, say). Send returns the
// delivery's [SendResult]: sent, or skipped when the recipient has no
// address of the kind ([SendResult.Skipped], [NoAddress]). A render error
// or panic fails the step like a [Run] callback's. [Notify] takes the
// content of each kind in full.
func Send(ctx *Context, stepID string, channel Channel, render func(context.Context) (SendContent, error), opts ...SendOption) (SendResult, error) {
	if render == nil {
		return send(ctx, stepID, channel, nil, opts)
	}
	return send(ctx, stepID, channel, func() (any, error) { return render(ctx.ctx) }, opts)
}

// Notify is a [Send] step whose content's type names the channel kind:
// render returns an [EmailContent] to send an email, an [SMSContent] for a
// text message, and so on, each with every field of its kind (CONTRACT
// §10). A content missing a required field fails the run with
// invalid_content.
func Notify[C Content](ctx *Context, stepID string, render func(context.Context) (C, error), opts ...SendOption) (SendResult, error) {
	var zero C
	if render == nil {
		return send(ctx, stepID, channelOf(zero), nil, opts)
	}
	return send(ctx, stepID, channelOf(zero), func() (any, error) { return render(ctx.ctx) }, opts)
}

// send is the step of Send and Notify: render returns the content, which
// must encode as a JSON object.
func send(ctx *Context, stepID string, channel Channel, render func() (any, error), opts []SendOption) (SendResult, error) {
	if res, done, err := recorded[SendResult](ctx, stepID, wire.StepSend); done || err != nil {
		return res, err
	}
	var o sendOptions
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case channel == "":
		return SendResult{}, ctx.invalid(stepID, "empty channel kind")
	case render == nil:
		return SendResult{}, ctx.invalid(stepID, "nil render function")
	case o.to != nil && *o.to == "":
		return SendResult{}, ctx.invalid(stepID, "empty recipient in To")
	}
	content, err := callback(ctx, stepID, render)
	if err != nil {
		return SendResult{}, err
	}
	raw, err := wire.Marshal(content)
	if err != nil {
		return SendResult{}, ctx.fail(&StepError{StepID: stepID, Err: fmt.Errorf("content does not encode as JSON: %w", err)})
	}
	return SendResult{}, ctx.answer(wire.Step{StepID: stepID, Type: wire.StepSend, Channel: string(channel), To: o.to, Content: raw})
}

// Delay is a step that pauses the run for d (whole or fractional seconds on
// the wire). No tenant code runs while the run sleeps. d must not be negative.
func Delay(ctx *Context, stepID string, d time.Duration) error {
	rec, err := ctx.begin(stepID, wire.StepDelay)
	if err != nil || rec != nil {
		return err
	}
	if d < 0 {
		return ctx.invalid(stepID, "negative delay")
	}
	seconds := d.Seconds()
	return ctx.answer(wire.Step{StepID: stepID, Type: wire.StepDelay, Seconds: &seconds})
}

// DelayUntil is a step that pauses the run until t (sent in UTC, RFC 3339). A
// t in the past resumes the run at once; the zero t, or any t before year 1
// or after 9999, is invalid.
func DelayUntil(ctx *Context, stepID string, t time.Time) error {
	rec, err := ctx.begin(stepID, wire.StepDelay)
	if err != nil || rec != nil {
		return err
	}
	until := t.UTC()
	if t.IsZero() || until.Year() < 1 || until.Year() > 9999 {
		return ctx.invalid(stepID, "zero time, or a time outside the years 1 to 9999")
	}
	return ctx.answer(wire.Step{StepID: stepID, Type: wire.StepDelay, Until: &until})
}

// DelayUntilLocal is a step that pauses the run until the next time the
// subscriber's clock reads localTime ("HH:MM", 00:00 to 23:59), in its
// time zone (UTC when it has none, and for a run without a subscriber).
// The service picks the instant when it records the step, in calendar
// days: 09:00 stays 09:00 across a daylight saving change. A localTime
// that is not HH:MM is invalid.
func DelayUntilLocal(ctx *Context, stepID, localTime string) error {
	rec, err := ctx.begin(stepID, wire.StepDelay)
	if err != nil || rec != nil {
		return err
	}
	if _, _, ok := wire.ParseLocalTime(localTime); !ok {
		return ctx.invalid(stepID, fmt.Sprintf("local time %q is not HH:MM, 00:00 to 23:59", localTime))
	}
	return ctx.answer(wire.Step{StepID: stepID, Type: wire.StepDelay, LocalTime: localTime})
}

// WaitForEvent is a step that suspends the run until a signal named event
// reaches it (POST /v1/events/{runId}/signal), or until timeout elapses; 0
// means no timeout, and a negative timeout is invalid. Signals are buffered
// by the service: one sent before the run reached the wait still counts.
//
// It returns the signal's payload decoded into T and ok true; on timeout it
// returns the zero T and ok false. The wire records a timeout as the output
// null, and so does a signal sent without a payload: such a signal also
// reads as ok false, so send a payload when the waiting code must tell the
// two apart. A recorded payload that does not decode into T is
// [ErrNondeterministic], as for [Run]: use json.RawMessage or
// map[string]any for a payload of no fixed shape.
func WaitForEvent[T any](ctx *Context, stepID, event string, timeout time.Duration) (v T, ok bool, err error) {
	rec, err := ctx.begin(stepID, wire.StepWaitForEvent)
	if err != nil {
		return v, false, err
	}
	if rec != nil {
		out := orNull(rec.Output)
		if string(out) == "null" {
			return v, false, nil
		}
		if err := json.Unmarshal(out, &v); err != nil {
			var zero T
			return zero, false, ctx.fail(fmt.Errorf("%w: step %d %q (waitForEvent) recorded a payload that does not decode as %T: %v",
				ErrNondeterministic, ctx.calls, stepID, zero, err))
		}
		return v, true, nil
	}
	switch {
	case event == "":
		return v, false, ctx.invalid(stepID, "empty event name")
	case timeout < 0:
		return v, false, ctx.invalid(stepID, "negative timeout")
	}
	step := wire.Step{StepID: stepID, Type: wire.StepWaitForEvent, Event: event}
	if timeout > 0 {
		t := wire.DurationOf(timeout)
		step.Timeout = &t
	}
	return v, false, ctx.answer(step)
}

// DigestOption configures a [Digest] step.
type DigestOption func(*digestOptions)

type digestOptions struct{ key, cron *string }

// DigestKey splits the digests of one workflow and subscriber by key: runs
// gather only with runs of the same key. An empty key is the same as none.
func DigestKey(key string) DigestOption {
	return func(o *digestOptions) {
		if key != "" {
			o.key = &key
		}
	}
}

// DigestCron closes the digest at the next instant of a cron expression
// (5 fields, 6 with seconds first, or a tag like @daily) in the
// subscriber's time zone (UTC when it has none) instead of after a
// window: DigestCron("0 9 * * 1-5") sends at 9 in the morning on
// weekdays, the subscriber's time. [Digest]'s window must then be 0, and
// expr not blank. The service checks the expression; one it cannot read
// fails the run.
func DigestCron(expr string) DigestOption {
	return func(o *digestOptions) { o.cron = &expr }
}

// Digest is a step that gathers the runs of this workflow and subscriber
// (and [DigestKey], when given) that reach it within window, which must be
// positive (or 0 with [DigestCron]). The run that opens the window resumes after it with every
// gathered payload, its own included; the runs that join end there with the
// status digested and run no further step.
func Digest(ctx *Context, stepID string, window time.Duration, opts ...DigestOption) (DigestResult, error) {
	if res, done, err := recorded[DigestResult](ctx, stepID, wire.StepDigest); done || err != nil {
		return res, err
	}
	var o digestOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.cron != nil {
		switch {
		case window != 0:
			return DigestResult{}, ctx.invalid(stepID, "a cron digest takes no window")
		case strings.TrimSpace(*o.cron) == "":
			return DigestResult{}, ctx.invalid(stepID, "empty cron")
		}
		return DigestResult{}, ctx.answer(wire.Step{StepID: stepID, Type: wire.StepDigest, Cron: o.cron, Key: o.key})
	}
	if window <= 0 {
		return DigestResult{}, ctx.invalid(stepID, "window must be positive")
	}
	w := wire.DurationOf(window)
	return DigestResult{}, ctx.answer(wire.Step{StepID: stepID, Type: wire.StepDigest, Window: &w, Key: o.key})
}

// ThrottleOption configures a [Throttle] step.
type ThrottleOption func(*throttleOptions)

type throttleOptions struct{ key *string }

// ThrottleKey splits the counts of one workflow and subscriber by key: a
// run counts only with runs of the same key. An empty key is the same as
// none. A key is at most 256 characters.
func ThrottleKey(key string) ThrottleOption {
	return func(o *throttleOptions) {
		if key != "" {
			o.key = &key
		}
	}
}

// Throttle is a step that counts the runs of this workflow and subscriber
// (and [ThrottleKey], when given) that reached a throttle step within the
// last window, this run included, throttled or not. The result's Count is
// that number and Throttled says whether it is over limit. The run goes on
// either way: the workflow decides, for instance to skip a send.
// limit must be at least 1, and window positive and at most 31 days.
//
//	t, err := bridge.Throttle(ctx, "at-most-3-an-hour", 3, time.Hour)
//	if err != nil || t.Throttled {
//		return err
//	}
func Throttle(ctx *Context, stepID string, limit int, window time.Duration, opts ...ThrottleOption) (ThrottleResult, error) {
	if res, done, err := recorded[ThrottleResult](ctx, stepID, wire.StepThrottle); done || err != nil {
		return res, err
	}
	switch {
	case limit < 1:
		return ThrottleResult{}, ctx.invalid(stepID, "limit must be at least 1")
	case window <= 0 || window > wire.MaxThrottleWindow:
		return ThrottleResult{}, ctx.invalid(stepID, "window must be positive and at most 31 days")
	}
	var o throttleOptions
	for _, opt := range opts {
		opt(&o)
	}
	w, l := wire.DurationOf(window), int64(limit)
	return ThrottleResult{}, ctx.answer(wire.Step{StepID: stepID, Type: wire.StepThrottle, Limit: &l, Window: &w, Key: o.key})
}

// callback runs tenant code of a step: a panic becomes an error, a step
// called from inside is refused, and a failure ends the execution.
func callback[T any](c *Context, stepID string, f func() (T, error)) (v T, err error) {
	c.inStep = true
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		v, err = f()
	}()
	c.inStep = false
	switch {
	case c.err != nil: // f called a step, which failed the execution
		return v, c.err
	case err != nil:
		return v, c.fail(&StepError{StepID: stepID, Err: err})
	}
	return v, nil
}

// recorded begins step stepID of typ (see Context.begin): done when the
// history records the step, with res its recorded output.
func recorded[T any](ctx *Context, stepID string, typ wire.StepType) (res T, done bool, err error) {
	rec, err := ctx.begin(stepID, typ)
	if err != nil || rec == nil {
		return res, false, err
	}
	err = ctx.decodeRecorded(rec, &res)
	return res, true, err
}

// decodeRecorded decodes the output the service recorded for a send or a
// digest step; one that does not decode is the service's fault.
func (c *Context) decodeRecorded(rec *wire.CompletedStep, v any) error {
	if err := json.Unmarshal(orNull(rec.Output), v); err != nil {
		return c.fail(fmt.Errorf("%w: the recorded output of %s step %q does not decode: %v",
			errInvalidRequest, rec.Type, rec.StepID, err))
	}
	return nil
}

// orNull returns raw, or the JSON null when raw is empty.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
