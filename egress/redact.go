package egress

import (
	"regexp"
	"strings"
)

// urlPattern finds URLs in an error's text: a scheme, "://", and what
// follows up to a space or a quote (Go's url.Error quotes the URL).
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// LogText is err's text for the operator's log, with every URL in it
// reduced by [LogURL]: Go's *url.Error (and every error that wraps or
// flattens one) quotes the whole request URL, whose query and userinfo may
// hold a tenant's token or password. nil gives "".
func LogText(err error) string {
	if err == nil {
		return ""
	}
	return urlPattern.ReplaceAllStringFunc(err.Error(), LogURL)
}

// LogURL is raw without its userinfo, query and fragment: scheme, host and
// path, what an operator needs to see which destination failed. It works
// on text rather than a parsed URL so that no URL, however malformed,
// comes out whole.
func LogURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		rest, scheme = raw, ""
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if scheme == "" {
		return authority + path
	}
	return scheme + "://" + authority + path
}
