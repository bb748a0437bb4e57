// Package email composes the email messages Herald sends: one RFC 5322
// message, MIME-encoded by github.com/emersion/go-message, whose bytes go
// unchanged over SMTP (delivery/smtp) and to an API provider as a raw
// message (delivery/ses).
//
// # Basics
//
//	data, err := email.Compose(email.Message{
//		FromEmail: "noreply@example.com", FromName: "Example",
//		To:        "ada@example.com",
//		MessageID: email.MessageID(tenant, idempotencyKey, "noreply@example.com"),
//		Date:      now,
//		Content:   wire.EmailContent{Subject: "Hi", HTML: "<p>Hi</p>", Text: "Hi"},
//	})
//
// # The message
//
// The header carries, in this order: Date, Message-Id, From, To, Reply-To
// (when set), Subject, MIME-Version: 1.0 and Content-Type; a single-part
// message also Content-Transfer-Encoding: quoted-printable. Lines end in
// CRLF and header lines are folded within 76 characters where the words
// allow it.
//
//   - From is "FromName <FromEmail>" (just <FromEmail> without a name), To
//     and Reply-To are formatted the same way; a non-ASCII name and a
//     non-ASCII subject are RFC 2047-encoded (UTF-8, Q encoding). CR and LF
//     in the subject become spaces, so content cannot add header fields.
//   - The body parts come from the content (wire.EmailContent): HTML and
//     Text both set make a multipart/alternative message, the text part
//     first (RFC 2046 puts the preferred, richer part last); one of them
//     alone makes a single part of its type. Body fills the missing one:
//     HTML when it starts with '<' after leading white space, text
//     otherwise (with neither HTML nor Text, Body alone keeps that rule).
//     Every part is text/html or text/plain; charset=utf-8, quoted-printable,
//     and ends with a line break.
//   - The multipart boundary is derived from the Message-ID and contains
//     "=_", which quoted-printable text cannot contain: composing the same
//     Message twice gives the same bytes.
package email
