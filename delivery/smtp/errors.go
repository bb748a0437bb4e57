package smtp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/heraldhq/herald/delivery/provider"
)

// Sentinels. Every error [Sender.Send] returns matches exactly one of them
// under errors.Is.
var (
	// ErrRejected reports a permanent refusal: a 5xx reply to any SMTP
	// command (AUTH with wrong credentials included), or a server that offers
	// no usable AUTH mechanism while Config.Username is set. Sending the same
	// message with the same channel config again cannot succeed.
	ErrRejected = errors.New("smtp: rejected")

	// ErrUnavailable reports a transient failure: a 4xx reply, a network
	// error, a timeout, ctx cancelled or expired, or a TLS handshake or
	// certificate failure. A later attempt may succeed.
	ErrUnavailable = errors.New("smtp: unavailable")

	// ErrInvalid reports a Config or Message that failed validation. Nothing
	// was sent and no connection was made; retrying cannot help.
	ErrInvalid = errors.New("smtp: invalid")

	// ErrClosed reports a Send on a Sender after Close.
	ErrClosed = errors.New("smtp: sender closed")
)

// Error is a failure of the SMTP exchange: either the server's error reply
// or a failure to talk to it. It matches ErrRejected when Temporary is false
// and ErrUnavailable when it is true, and unwraps to Err. It also matches
// exactly one of the provider kinds (see Is), which decide failover.
//
// No field holds the channel's password.
type Error struct {
	// Command is the step that failed: "connect" (dial, TLS handshake,
	// greeting, EHLO), "STARTTLS", "AUTH", "NOOP", "MAIL", "RCPT" or "DATA"
	// (the DATA command, the message body and the reply to it).
	Command string
	// Code is the SMTP reply code, 0 when there was no reply.
	Code int
	// EnhancedCode is the RFC 3463 status code ("5.1.1"), empty when the
	// server gave none.
	EnhancedCode string
	// Message is the server's reply text, or a description of the failure.
	Message string
	// Temporary reports whether a later attempt may succeed.
	Temporary bool
	// BodyStarted reports that the server had accepted DATA and the
	// message body had started to flow when the exchange failed: without a
	// reply, the server may have accepted the message.
	BodyStarted bool
	// Err is the cause: a *gosmtp.SMTPError for a reply, the network, TLS or
	// context error otherwise.
	Err error
	// public, when set, is the sentence PublicMessage gives: a failure
	// decided here, in words that hold nothing from the server.
	public string
}

// PublicMessage describes err, an error of [Sender.Send], for the tenant:
// the command and the reply code ("smtp RCPT: 550 5.1.1"), or a fixed
// sentence, never the server's text (a tenant's host may be a service
// that is not an SMTP server, whose banner must not leak). Log err itself
// for the detail.
func PublicMessage(err error) string {
	e, ok := errors.AsType[*Error](err)
	switch {
	case ok && e.public != "":
		return e.public
	case ok && e.Code != 0:
		s := fmt.Sprintf("smtp %s: %d", e.Command, e.Code)
		if e.EnhancedCode != "" {
			s += " " + e.EnhancedCode
		}
		return s
	case ok && e.Command != "":
		return fmt.Sprintf("smtp %s: the connection failed or timed out", e.Command)
	case ok:
		return "smtp: the connection failed or timed out"
	case errors.Is(err, ErrInvalid):
		return err.Error() // the channel's or message's own values, checked here
	case errors.Is(err, ErrClosed):
		return ErrClosed.Error()
	}
	return "smtp: the send failed"
}

// Error formats the failure as "smtp: COMMAND: CODE ENHANCED message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("smtp: ")
	if e.Command != "" {
		b.WriteString(e.Command)
		b.WriteString(": ")
	}
	if e.Code != 0 {
		b.WriteString(strconv.Itoa(e.Code))
		b.WriteByte(' ')
	}
	if e.EnhancedCode != "" {
		b.WriteString(e.EnhancedCode)
		b.WriteByte(' ')
	}
	b.WriteString(e.Message)
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable (Temporary) or ErrRejected
// (not Temporary), or the provider kind of e (CONTRACT.md §10):
//
//   - provider.ErrRejected: a 5xx reply to RCPT (the recipient refused) or
//     to the message body (the message refused for good: a content policy).
//   - provider.ErrOutcomeUnknown: no reply after the body started to flow
//     (a network error, a timeout, ctx ended): the server may have
//     accepted the message, so it must not go out on another channel.
//   - provider.ErrNotSent: everything else, all of it before the message
//     was accepted: a failure to connect or a TLS failure, any reply before
//     the body (the greeting, EHLO, STARTTLS, AUTH, MAIL, a 4xx to RCPT, the
//     DATA command), a 4xx reply to the body (the server kept nothing), a
//     dial the egress policy refused, a refusal decided here (no usable
//     AUTH, no SMTPUTF8).
//
// It also reports provider.ErrBadAddress, beside provider.ErrRejected,
// for a 5xx reply to RCPT whose enhanced code says the address does not
// exist (see badAddressCodes).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.Temporary
	case ErrRejected:
		return !e.Temporary
	case provider.ErrNotSent, provider.ErrOutcomeUnknown, provider.ErrRejected:
		return e.kind() == target
	case provider.ErrBadAddress:
		return e.badAddress()
	}
	return false
}

// badAddressCodes are the RFC 3463 enhanced codes of a permanent reply to
// RCPT that say the recipient's address does not exist: 5.1.1 bad
// destination mailbox (user unknown), 5.1.2 bad destination system (no
// such domain), 5.1.3 bad destination mailbox address syntax, 5.1.10
// recipient address has a null MX (RFC 7505). 5.1.0 (other address
// status) is too vague to suppress on, and 5.1.7/5.1.8 are about the
// sender. A 5xx without an enhanced code says nothing about the address:
// servers answer a bare 550 for policy refusals too.
var badAddressCodes = map[string]bool{"5.1.1": true, "5.1.2": true, "5.1.3": true, "5.1.10": true}

// badAddress reports whether e is a permanent rejection of the recipient
// saying its address does not exist (provider.ErrBadAddress).
func (e *Error) badAddress() bool {
	return e.Command == "RCPT" && e.Code/100 == 5 && badAddressCodes[e.EnhancedCode]
}

// kind is e's provider kind (see Is).
func (e *Error) kind() error {
	switch {
	case e.Code/100 == 5 && (e.Command == "RCPT" || e.Command == "DATA" && e.BodyStarted):
		return provider.ErrRejected
	case e.Code == 0 && e.public == "" && e.BodyStarted:
		return provider.ErrOutcomeUnknown
	}
	return provider.ErrNotSent
}

// kinded gives an error of Send that is not an *Error its provider kind:
// it unwraps to both.
type kinded struct {
	err, kind error
}

func (k *kinded) Error() string   { return k.err.Error() }
func (k *kinded) Unwrap() []error { return []error{k.err, k.kind} }

// newError classifies err, which happened during command. A server reply
// decides by its code (5xx permanent, anything else temporary); a failure
// without a reply is temporary, and when ctx is done its cause is reported
// instead of the "use of closed connection" its cancellation provoked.
func newError(ctx context.Context, command string, err error, red redactor) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	if se, ok := errors.AsType[*gosmtp.SMTPError](err); ok {
		msg := red.apply(se.Message)
		e := &Error{
			Command:   command,
			Code:      se.Code,
			Message:   msg,
			Temporary: se.Code/100 != 5,
			Err:       &gosmtp.SMTPError{Code: se.Code, EnhancedCode: se.EnhancedCode, Message: msg},
		}
		if c := se.EnhancedCode; c != gosmtp.NoEnhancedCode && c != gosmtp.EnhancedCodeNotSet {
			e.EnhancedCode = fmt.Sprintf("%d.%d.%d", c[0], c[1], c[2])
		}
		return e
	}
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return &Error{Command: command, Message: red.apply(err.Error()), Temporary: true, Err: err}
}

// redactor hides a channel's password in text that came from elsewhere (a
// server's reply may echo what it was sent).
type redactor []string

// newRedactor hides cfg.Password as is and in the base64 forms AUTH PLAIN
// and AUTH LOGIN put on the wire.
func newRedactor(cfg Config) redactor {
	if cfg.Password == "" {
		return nil
	}
	enc := base64.StdEncoding
	return redactor{
		enc.EncodeToString([]byte("\x00" + cfg.Username + "\x00" + cfg.Password)),
		enc.EncodeToString([]byte(cfg.Password)),
		cfg.Password,
	}
}

func (r redactor) apply(s string) string {
	for _, secret := range r {
		s = strings.ReplaceAll(s, secret, "[REDACTED]")
	}
	return s
}
