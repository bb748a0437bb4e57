package delivery

import (
	"bytes"
	"encoding/json"
	"net/mail"
	"net/url"
	"slices"

	"github.com/heraldhq/herald/apierr"
)

// MaxContentBytes bounds a send step's content (CONTRACT.md §10).
const MaxContentBytes = 256 << 10

// Channel kinds: the keys of a subscriber's contacts that channels deliver
// to, and the kinds of the catalog's entries.
const (
	KindEmail   = "email"
	KindSMS     = "sms"
	KindChat    = "chat"
	KindPush    = "push"
	KindInApp   = "in_app"
	KindWebhook = "webhook"
)

// contentType is how one field of a kind's content is checked.
type contentType int

const (
	ctString    contentType = iota // a JSON string
	ctEmail                        // a JSON string holding an email address, a name allowed
	ctArray                        // a JSON array, passed on as it is
	ctStringMap                    // an object of string values
	ctAny                          // any JSON value but null
	ctAction                       // {"label","url"}, both non-empty strings
)

// contentField is one field of a kind's content.
type contentField struct {
	name     string
	typ      contentType
	required bool
}

// contentFields lists the fields of each kind's content, as the types of
// bridge/wire (wire.EmailContent, ...) declare them. A kind absent from
// the map has no content rules: its send fails with no_channel.
var contentFields = map[string][]contentField{
	KindEmail: {{"subject", ctString, true}, {"body", ctString, false}, {"html", ctString, false},
		{"text", ctString, false}, {"replyTo", ctEmail, false}, {"layout", ctString, false}},
	KindSMS:     {{"body", ctString, true}},
	KindChat:    {{"body", ctString, true}, {"blocks", ctArray, false}},
	KindPush:    {{"title", ctString, true}, {"body", ctString, true}, {"data", ctStringMap, false}},
	KindInApp:   {{"subject", ctString, false}, {"body", ctString, true}, {"data", ctAny, false}, {"primaryAction", ctAction, false}},
	KindWebhook: {{"data", ctAny, true}},
}

// ValidateContent checks that content is the content of kind (CONTRACT.md
// §10): an object of the kind's fields only, each of its type, the
// required ones present and non-empty, at most MaxContentBytes. Problems
// name the fields as "content.<name>". The error wraps ErrInvalidContent
// and a *apierr.ValidationError with code invalid_content; nil when there
// is no problem or kind is not a kind Herald knows (its send fails with
// no_channel).
func ValidateContent(kind string, content json.RawMessage) error {
	fields, ok := contentFields[kind]
	if !ok {
		return nil
	}
	var p apierr.Problems
	var obj map[string]json.RawMessage
	switch {
	case len(content) > MaxContentBytes:
		p.Add("content", "must be at most %d bytes", MaxContentBytes)
	case json.Unmarshal(content, &obj) != nil || obj == nil:
		p.Add("content", "must be an object")
	}
	if len(p) > 0 {
		return invalidContent(p)
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.ContainsFunc(fields, func(f contentField) bool { return f.name == name }) {
			p.Add("content."+name, "is not a field of %s content", kind)
		}
	}
	for _, f := range fields {
		raw, present := obj[f.name]
		if present && bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			present = false // null and absent mean the same
		}
		field := "content." + f.name
		if !present {
			if f.required {
				p.Add(field, "is required")
			}
			continue
		}
		checkContentField(&p, field, f, raw)
	}
	if kind == KindEmail {
		var e struct{ Body, HTML, Text string }
		_ = json.Unmarshal(content, &e)
		if e.Body == "" && e.HTML == "" && e.Text == "" && !slices.ContainsFunc(p, func(fp apierr.FieldProblem) bool {
			return fp.Field == "content.body" || fp.Field == "content.html" || fp.Field == "content.text"
		}) {
			p.Add("content.body", "is required unless html or text is given")
		}
	}
	if len(p) == 0 {
		return nil
	}
	return invalidContent(p)
}

// checkContentField adds the problems of one present field's value.
func checkContentField(p *apierr.Problems, field string, f contentField, raw json.RawMessage) {
	switch f.typ {
	case ctString, ctEmail:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			p.Add(field, "must be a string")
			return
		}
		if f.required && s == "" {
			p.Add(field, "must not be empty")
		}
		if f.typ == ctEmail && s != "" {
			if _, err := mail.ParseAddress(s); err != nil {
				p.Add(field, "must be an email address")
			}
		}
	case ctArray:
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil {
			p.Add(field, "must be an array")
		}
	case ctStringMap:
		var m map[string]string
		if json.Unmarshal(raw, &m) != nil {
			p.Add(field, "must be an object of string values")
		}
	case ctAny:
	case ctAction:
		var a map[string]json.RawMessage
		if json.Unmarshal(raw, &a) != nil || a == nil {
			p.Add(field, "must be an object")
			return
		}
		for name := range a {
			if name != "label" && name != "url" {
				p.Add(field+"."+name, "is not a field of primaryAction")
			}
		}
		for _, name := range []string{"label", "url"} {
			var s string
			if v, ok := a[name]; !ok || json.Unmarshal(v, &s) != nil || s == "" {
				p.Add(field+"."+name, "is required: a non-empty string")
			} else if name == "url" && !webURL(s) {
				p.Add(field+"."+name, "must be an absolute http or https URL")
			}
		}
	}
}

// webURL reports whether s is an absolute http(s) URL with a host. An
// action's URL is shown as a link in a subscriber's browser: any other
// scheme (javascript:, data:, a relative path the page would resolve) is
// refused when the message is sent, not stored for every inbox to serve.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == ""
}

func invalidContent(p apierr.Problems) error {
	return &invalidRequest{ve: &apierr.ValidationError{Code: apierr.CodeInvalidContent, Problems: p}, kind: ErrInvalidContent}
}
