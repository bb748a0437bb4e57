// Package devmail is the development SMTP catcher behind `herald devmail`:
// an SMTP server that accepts any mail and an HTTP server that lists it.
//
// # Basics
//
// A [Server] accepts every message on its SMTP address (default
// 127.0.0.1:1025) — any sender, any recipient, with or without AUTH (PLAIN
// and LOGIN accept any credentials) — and keeps it in an [Inbox], a ring of
// the most recent messages (1000 by default). Nothing is relayed. Its HTTP
// address (default 127.0.0.1:8025) serves:
//
//	GET    /                   an HTML page listing the messages, newest first
//	GET    /api/messages       {"messages":[Message…]}, newest first
//	GET    /api/messages/{id}  one Message; 404 {"error":…} when unknown
//	DELETE /api/messages       empties the inbox; 204
//
// The usual life cycle is [NewServer] then [Server.Run], which blocks until
// its ctx is cancelled. Tests bind port 0 and learn the addresses first:
//
//	srv, _ := devmail.NewServer(devmail.Config{SMTPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
//	if err := srv.Listen(); err != nil { … }
//	go srv.Run(ctx)
//	send to srv.SMTPAddr(), then srv.Inbox().Wait(ctx, 1)
//
// Each caught message is parsed with net/mail and mime: headers are decoded
// from RFC 2047, the body from quoted-printable or base64. Of a multipart
// message the body is the first text/plain part, else the first text/html
// part. The raw message is kept as received.
//
// # Caveats
//
// The catcher offers no STARTTLS and takes credentials in clear: bind it to
// loopback. Bodies in a charset other than UTF-8 are shown as received.
// Cancelling Run cuts SMTP sessions still in progress.
package devmail
