// Package inboxui holds the in-app inbox's browser side, embedded in the
// binary: the <herald-inbox> web component (GET /inbox.js) and a demo
// page that shows it (GET /inbox/demo).
//
// The component is plain JavaScript with no dependency: a custom element
// with a shadow DOM, which talks to the inbox API of any Herald it is
// pointed at (api-url) with an inbox token (token), over fetch and an
// EventSource. docs/inbox.md shows how to embed it.
package inboxui

import _ "embed"

// Script is the <herald-inbox> web component (inbox.js).
//
//go:embed inbox.js
var Script []byte

// Demo is the demo page (demo.html): the component against the Herald
// that serves the page, with the token given as ?token= or pasted in.
//
//go:embed demo.html
var Demo []byte
