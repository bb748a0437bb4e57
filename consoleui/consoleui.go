// Package consoleui holds the console's files: one HTML document, a
// script and a style sheet, embedded in the binary and served by the API
// under /console/. The script is a plain ES module with no dependency
// and no build step: it renders every page from the public REST API with
// the tenant key the person signed in with (kept in the tab's
// sessionStorage), and writes every value as text, never as markup.
package consoleui

import _ "embed"

// Page is the console's HTML document, the same for every page.
//
//go:embed index.html
var Page []byte

//go:embed console.js
var script []byte

//go:embed console.css
var style []byte

// File is an asset with its content type.
type File struct {
	ContentType string
	Body        []byte
}

// Asset returns the asset named name (console.js, console.css).
func Asset(name string) (File, bool) {
	switch name {
	case "console.js":
		return File{"text/javascript; charset=utf-8", script}, true
	case "console.css":
		return File{"text/css; charset=utf-8", style}, true
	}
	return File{}, false
}
