// Package smtp delivers Herald's email channel ("email-smtp") through an SMTP
// server, on top of github.com/emersion/go-smtp's client.
//
// # Basics
//
// A [Sender] is created once per process and shared:
//
//	s := smtp.NewSender(smtp.Options{})
//	defer s.Close()
//	res, err := s.Send(ctx, cfg, smtp.Message{To: "ada@example.com", Subject: "Hi", Body: "Hello"})
//
// [Config] is the decrypted channel configuration. [Sender.Send] renders the
// [Message] as an RFC 5322 message (see "The message" below), opens or reuses a
// session with the channel's server and runs one mail transaction: the
// envelope sender is Config.FromEmail and the only recipient Message.To.
//
// Transport security follows Config.Secure:
//
//   - Secure=true: implicit TLS from the first byte (usually port 465).
//   - Secure=false: STARTTLS when the server advertises it, plain SMTP when it
//     does not. A server that advertises STARTTLS and then fails it is an error,
//     never a silent fallback to plain.
//
// Certificates are verified against Options.TLSConfig.RootCAs (the system
// pool when nil) with the server name set to Config.Host.
//
// When Config.Username is set, the session authenticates with AUTH PLAIN, or
// AUTH LOGIN when the server offers only LOGIN. The password is never logged
// and never appears in an error (see "Errors").
//
// # The provider
//
// [New] is the provider.New of the catalog entry "email-smtp"
// ([ChannelKey]), registered by package delivery like every other
// provider: it reads the channel's opened config ([ParseConfig]) and sends
// through a Sender of its own, which dials through provider.Deps.Dial (the
// egress policy) with provider.Deps.TLSConfig and keeps up to 32 sessions
// open; [Provider.Close] ends them. [Provider.Send] composes the send
// step's whole email content (html and text, replyTo) and returns the
// message's Message-ID, derived from the tenant and the idempotency key.
// [Sender.New] builds providers over a Sender tuned by its caller.
//
// # The message
//
// The message is composed by package delivery/email (github.com/emersion/go-message),
// the same bytes an API provider sends raw; its package doc has the header
// fields, their order and encoding. In short: Date, Message-Id, From, To,
// Reply-To (Message.ReplyTo, when set), Subject (RFC 2047-encoded, CR and LF
// replaced by spaces), MIME-Version: 1.0, Content-Type, with CRLF line
// endings; every text part UTF-8 and quoted-printable.
//
//   - Message-ID is Message.MessageID in angle brackets when set (Herald
//     derives it from the delivery's idempotency key, so every attempt of one
//     delivery carries the same id), <random@domain> otherwise, domain being
//     the part of FromEmail after the '@'. [Result].MessageID is that id
//     without the angle brackets; it is the provider message id Herald
//     records.
//   - From is "FromName <FromEmail>" (just <FromEmail> without a name), a
//     non-ASCII name RFC 2047-encoded.
//   - Message.HTML and Message.Text together make a multipart/alternative
//     message. Body alone is text/html when, after leading white space is
//     trimmed, it starts with '<', text/plain otherwise.
//
// # Connection reuse
//
// A Sender keeps up to Options.MaxIdlePerChannel idle sessions per channel
// (same host, port, Secure, username, password, and from address) for
// Options.IdleTimeout, and opens at most Options.MaxOpenPerChannel sessions
// per channel at once (when set): a Send finding them all busy waits for
// one. An idle session reused after more than Options.CheckAfterIdle must
// answer NOOP first; one that does not is closed and the next idle session
// or a new one is used. A session whose transaction ended in an SMTP error
// reply is reset with RSET before it goes back to the pool.
//
// If a reused session breaks (network error or a 421 reply) before the
// server accepted the DATA command, the message is sent once more on a new
// connection. Once the message body has started to flow, Send never retries:
// a second attempt could deliver the message twice.
//
// # Errors
//
// Every error Send returns matches exactly one of [ErrRejected],
// [ErrUnavailable], [ErrInvalid] and [ErrClosed] under errors.Is. Failures
// of the SMTP exchange are an [*Error] carrying the reply code, the enhanced
// status code and the server's text:
//
//   - ErrRejected (permanent): a 5xx reply to any command — the greeting,
//     EHLO, STARTTLS, AUTH (wrong credentials), MAIL, RCPT or DATA — or a
//     server that offers neither PLAIN nor LOGIN while Config.Username is set.
//   - ErrUnavailable (transient): a 4xx reply, a network error, a timeout,
//     ctx cancelled or expired (errors.Is(err, ctx.Err()) also holds), and a
//     TLS handshake or certificate verification failure. TLS failures count as
//     transient because they are not a reply from the server and do heal
//     (a certificate renewed late); the caller's attempt limit bounds them.
//
// Every error Send returns also matches exactly one of the provider kinds
// (delivery/provider), which decide failover: provider.ErrRejected for a
// 5xx reply to RCPT or to the message body and for a Message that fails
// Validate; provider.ErrOutcomeUnknown for a failure without a reply once
// the body had started to flow (the server may have the message);
// provider.ErrNotSent for everything else, all of it before the server
// could have accepted the message (see [Error.Is]).
//
// Anything that could carry the password — the server's reply text included,
// in case it echoes the credentials — has the password, and its base64 forms
// used by PLAIN and LOGIN, replaced by "[REDACTED]".
//
// # Caveats
//
// SMTP cannot tell a lost reply to the final "." from a lost message. When
// the connection fails or ctx ends after the message body was sent but before
// the server's reply arrived, Send returns ErrUnavailable (and
// provider.ErrOutcomeUnknown) although the server may have accepted the
// message; a caller that retries may deliver it twice, which the constant
// Message-ID lets mail clients hide.
//
// Authentication follows what the server advertises. With Secure=false and a
// server that offers no STARTTLS but does offer AUTH, the credentials cross
// the network in clear; an attacker able to strip STARTTLS from the EHLO
// reply can read them. Use Secure=true for credentials on untrusted networks.
package smtp
