// Package consoleui holds the console's files: one HTML document, its
// scripts (plain ES modules: console.js routes, api.js is the transport,
// dom.js the widgets, pages/ one module a page), a style sheet and a
// favicon, embedded in the binary and served by the API under /console/.
// The scripts have no dependency and no build step: they render every
// page from the public REST API with the tenant key the person signed in
// with (kept in the tab's sessionStorage), and write every value as
// text, never as markup.
package consoleui

import (
	"embed"
	"io/fs"
	"path"
)

// Page is the console's HTML document, the same for every page.
//
//go:embed index.html
var Page []byte

// Favicon is the console's icon, served at /favicon.ico.
//
//go:embed favicon.ico
var Favicon []byte

//go:embed *.js pages/*.js console.css
var assets embed.FS

// File is an asset with its content type.
type File struct {
	ContentType string
	Body        []byte
}

var types = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// Asset returns the asset named name, a path below the assets
// (console.js, pages/run.js, console.css).
func Asset(name string) (File, bool) {
	ct, ok := types[path.Ext(name)]
	if !ok || !fs.ValidPath(name) {
		return File{}, false
	}
	b, err := assets.ReadFile(name)
	if err != nil {
		return File{}, false
	}
	return File{ct, b}, true
}
