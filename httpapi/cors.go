package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// corsMaxAge is how long a browser may cache a preflight's answer, in
// seconds.
const corsMaxAge = "600"

// corsPath reports whether a path is one a subscriber's browser calls from
// the tenant's pages: the subscriber routes of the inbox (the stream
// included) and the component's script.
func corsPath(path string) bool {
	return strings.HasPrefix(path, "/v1/inbox/") || path == "/inbox.js"
}

// withCORS answers cross-origin requests to the corsPath routes from the
// origins of Config.InboxOrigins: it adds Access-Control-Allow-Origin to
// their answers (errors included, so that a page can read a 401) and
// answers their preflight OPTIONS with 204. Other routes, and other
// origins, get no CORS header: a browser then refuses the page the answer.
func (s *Server) withCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corsPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		origin := r.Header.Get("Origin")
		allowed := s.allowedOrigin(origin)
		if origin != "" && allowed != "*" {
			h.Add("Vary", "Origin")
		}
		if allowed != "" {
			h.Set("Access-Control-Allow-Origin", allowed)
			h.Set("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if allowed != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
				h.Set("Access-Control-Max-Age", corsMaxAge)
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedOrigin returns the Access-Control-Allow-Origin value for a
// request's Origin: "*" when every origin is allowed, the origin itself
// when it is listed, else "".
func (s *Server) allowedOrigin(origin string) string {
	if slices.Contains(s.cfg.InboxOrigins, "*") {
		return "*"
	}
	if origin != "" && slices.Contains(s.cfg.InboxOrigins, origin) {
		return origin
	}
	return ""
}
