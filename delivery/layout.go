package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

// layoutPlaceholder is where a send's HTML goes in a layout.
const layoutPlaceholder = "{{content}}"

// ApplyLayout wraps the HTML part of an email content in its layout: the
// one its "layout" names, none for "layout": null, the tenant's default
// layout when it names none (none when no layout is marked default). The
// HTML part is "html", or "body" alone when it looks like HTML (as the
// email composer reads them); the text part is untouched, and content
// without an HTML part is sent as it is. The "layout" field itself is not
// passed on. A layout id the tenant does not have is invalid_content.
// Deliver applies it to every email; a preview shows what it would send.
func ApplyLayout(store *projections.Store, tenant string, content json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(content, &obj); err != nil {
		return content, nil // ValidateContent refused it already
	}
	raw, named := obj["layout"]
	var (
		l   projections.Layout
		has bool
		err error
	)
	switch {
	case !named:
		if l, has, err = store.DefaultLayout(tenant); err != nil || !has {
			return content, err
		}
	case bytes.Equal(bytes.TrimSpace(raw), []byte("null")):
	default:
		var id string
		_ = json.Unmarshal(raw, &id) // ValidateContent checked it is a string
		l, err = store.Layout(tenant, id)
		if errors.Is(err, projections.ErrNotFound) {
			var p apierr.Problems
			p.Add("content.layout", "names no layout of the tenant")
			return nil, invalidContent(p)
		}
		if err != nil {
			return nil, err
		}
		has = true
	}
	delete(obj, "layout")
	if has {
		var c struct{ Body, HTML string }
		_ = json.Unmarshal(content, &c)
		html := c.HTML
		if html == "" && strings.HasPrefix(strings.TrimLeft(c.Body, " \t\r\n"), "<") {
			html = c.Body
		}
		if html != "" {
			wrapped, err := json.Marshal(strings.Replace(l.HTML, layoutPlaceholder, html, 1))
			if err != nil {
				return nil, err
			}
			obj["html"] = wrapped
		}
	}
	return json.Marshal(obj)
}
