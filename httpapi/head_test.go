package httpapi_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/heraldhq/herald/httpapi"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// pathVar is a path variable of a route template, {name} or {name:pattern}.
var pathVar = regexp.MustCompile(`\{(\w+)(?::[^}]*)?\}`)

// TestHeadOnEveryGetRoute walks every GET route of the router and sends
// it HEAD as well as GET: the same status and headers, and nothing after
// the headers on the wire. A streaming route (the live tail, the inbox
// stream, a followed log) ends its HEAD once the headers are out: the
// server closes the connection the HEAD asked it to close.
func TestHeadOnEveryGetRoute(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	var tok struct{ Token string }
	h.Do("POST", "/v1/subscribers/u1/inbox-tokens", key, nil).JSON(t, &tok)
	values := map[string]string{"tenantId": tenant, "externalId": "u1", "name": "console.js", "page": "runs"}
	queries := map[string]string{"/v1/admin/events": "?follow=true", "/v1/subscribers/{externalId}/explain": "?workflowId=welcome"}

	// Routes that answer 200 here, the streams among them: a HEAD that
	// streamed would never end.
	ok200 := map[string]bool{"/console/": true, "/healthz": true, "/v1/runs": true, "/v1/tail": true,
		"/v1/inbox/stream": true, "/v1/admin/events": true, "/v1/subscribers/{externalId}": true}

	var templates []string
	router := httpapi.New(httpapi.Config{}, httpapi.Deps{}).Router()
	_ = router.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := rt.GetPathTemplate()
		methods, _ := rt.GetMethods()
		if err == nil && len(methods) == 1 && methods[0] == http.MethodGet {
			templates = append(templates, tpl)
		}
		return nil
	})
	if len(templates) < 30 {
		t.Fatalf("walked %d GET routes", len(templates))
	}
	get := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tpl := range templates {
		path := pathVar.ReplaceAllStringFunc(tpl, func(v string) string {
			name := pathVar.FindStringSubmatch(v)[1]
			if val, ok := values[name]; ok {
				return url.PathEscape(val)
			}
			return "x"
		}) + queries[tpl]
		token := key
		switch {
		case strings.HasPrefix(path, "/v1/admin/"):
			token = h.AdminToken()
		case strings.HasPrefix(path, "/v1/inbox/"):
			token = tok.Token
		}

		req, _ := http.NewRequest(http.MethodGet, h.URL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		g, err := get.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		// A stream is left there: its headers are what counts. The client
		// takes the Trailer header off a body it reads: put it back.
		g.Body.Close()
		for k := range g.Trailer {
			g.Header.Add("Trailer", k)
		}

		hd, rest := rawHead(t, h.URL(), path, token)
		if hd.StatusCode != g.StatusCode {
			t.Errorf("%s: HEAD %d, GET %d", tpl, hd.StatusCode, g.StatusCode)
		}
		if g.StatusCode == http.StatusMethodNotAllowed || hd.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("%s: GET %d, HEAD %d", tpl, g.StatusCode, hd.StatusCode)
		}
		if ok200[tpl] && (g.StatusCode != http.StatusOK || hd.StatusCode != http.StatusOK) {
			t.Errorf("%s: GET %d, HEAD %d, want 200", tpl, g.StatusCode, hd.StatusCode)
		}
		if rest != "" {
			t.Errorf("%s: HEAD sent a body: %.200q", tpl, rest)
		}
		for _, k := range headerNames(g.Header, hd.Header) {
			if k == "Date" || (k == "Content-Length" && tpl == "/metrics") { // the metrics count the GET itself
				continue
			}
			if gv, hv := g.Header.Values(k), hd.Header.Values(k); strings.Join(gv, ",") != strings.Join(hv, ",") {
				t.Errorf("%s: header %s: GET %q, HEAD %q", tpl, k, gv, hv)
			}
		}
	}
}

// rawHead sends HEAD path on a connection of its own, asking the server to
// close it, and returns the answer and what came after its headers until
// the server closed the connection.
func rawHead(t *testing.T, base, path, token string) (*http.Response, string) {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testwait.HangGuard)) // a HEAD that never ends is a hang
	if _, err := io.WriteString(conn, "HEAD "+path+" HTTP/1.1\r\nHost: "+u.Host+"\r\nAuthorization: Bearer "+token+
		"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("HEAD %s: %v", path, err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("HEAD %s: the connection did not end: %v", path, err)
	}
	return resp, string(rest)
}

func headerNames(hs ...http.Header) []string {
	seen := map[string]bool{}
	var names []string
	for _, h := range hs {
		for k := range h {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	return names
}
