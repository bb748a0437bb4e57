package httpapi

import (
	"embed"
	"errors"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/preferences"
	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/projections"
)

// The public pages of CONTRACT §12: /u/{token} (unsubscribe) and
// /p/{token} (the preference page). They need no API key: the token in
// the URL is the capability (links.Maker opens it), so they set no cookie
// and need no CSRF token. They are HTML rendered on the server, usable
// without JavaScript; nothing changes on a GET (mailbox providers and
// link scanners prefetch links).

//go:embed pages/*.html
var pageFiles embed.FS

var pageTemplates = template.Must(template.ParseFS(pageFiles, "pages/*.html"))

// Bounds of the public pages.
const (
	// maxPublicBody bounds a form post: a preference page of the most
	// workflows a sync records, every box on, fits.
	maxPublicBody = 256 << 10
	// publicRate is each subscriber's requests per second on the public
	// pages (bursts of twice that). The limit is per subscriber, not per
	// address: mailbox providers send one-click unsubscribes for many
	// users from few addresses.
	publicRate = 5
)

// kindLabels names the channel kinds on the preference page.
var kindLabels = map[string]string{"email": "Email", "sms": "SMS", "chat": "Chat", "push": "Push",
	"in_app": "In-app", "webhook": "Webhook"}

// publicClaims opens the token of r for purpose p and applies the
// subscriber's rate limit. It writes the answer itself when it fails
// (404 page, 429 page) and returns ok false.
func (s *Server) publicClaims(w http.ResponseWriter, r *http.Request, p links.Purpose) (links.Claims, bool) {
	setPublicHeaders(w)
	tok, err := pathVar(r, "token")
	var c links.Claims
	if err == nil && s.deps.Links != nil {
		c, err = s.deps.Links.Open(p, tok)
	}
	if err != nil || s.deps.Links == nil {
		s.notFoundPage(w)
		return c, false
	}
	noteTenant(w, c.Tenant)
	if s.public != nil {
		if ok, d := s.public.allow(c.Tenant+"\x00"+c.Subscriber, time.Now()); !ok {
			w.Header().Set("Retry-After", retryAfter(d))
			s.page(w, http.StatusTooManyRequests, "message", map[string]any{"Title": "Too many requests",
				"Message": "Please wait a moment and try again."})
			return c, false
		}
	}
	// The subscriber must still exist (an erased one's token opens
	// nothing).
	if err := s.caughtUp(r); err != nil {
		s.errorPage(w, r, err)
		return c, false
	}
	if _, err := s.deps.Control.Subscriber(c.Tenant, c.Subscriber); err != nil {
		if errors.Is(err, apierr.ErrNotFound) || errors.Is(err, apierr.ErrInvalid) {
			s.notFoundPage(w)
		} else {
			s.errorPage(w, r, err)
		}
		return c, false
	}
	return c, true
}

// setPublicHeaders keeps the token out of referrers and caches, and the
// page out of frames and scripts.
func setPublicHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
}

// page renders one of the page templates with data.
func (s *Server) page(w http.ResponseWriter, status int, name string, data map[string]any) {
	if _, ok := data["Title"]; !ok {
		data["Title"] = "Notification preferences"
	}
	var b strings.Builder
	if err := pageTemplates.ExecuteTemplate(&b, name, data); err != nil {
		s.logger.Error("public page did not render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String())
}

func (s *Server) notFoundPage(w http.ResponseWriter) {
	s.page(w, http.StatusNotFound, "message", map[string]any{"Title": "Link not valid",
		"Message": "This link is not valid, or no longer is."})
}

// errorPage answers a failure of a public page. The log names the route,
// never the path: the token in it is a capability.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := describe(err)
	if status == http.StatusInternalServerError {
		route := "/p/{token}"
		if strings.HasPrefix(r.URL.Path, "/u/") {
			route = "/u/{token}"
		}
		s.logger.Error("public page failed", "method", r.Method, "route", route, "err", err)
	} else {
		s.logger.Debug("public page refused", "status", status, "err", err)
	}
	s.page(w, status, "message", map[string]any{"Title": "Something went wrong",
		"Message": "Your request could not be completed. Please try again later."})
}

// readPublicBody reads (and discards, for the one-click POST) a body of
// at most maxPublicBody bytes; false when it was larger (413 written).
func (s *Server) readPublicBody(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxPublicBody)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.page(w, http.StatusRequestEntityTooLarge, "message", map[string]any{"Title": "Request too large",
				"Message": "The request was too large."})
			return false
		}
		// Any body is accepted for the one-click POST (RFC 8058 says
		// List-Unsubscribe=One-Click; some senders differ).
	}
	_, _ = io.Copy(io.Discard, r.Body)
	return true
}

// unsubscribeConfirm is GET /u/{token}: a page with a button that posts
// the unsubscribe. Nothing changes.
func (s *Server) unsubscribeConfirm(w http.ResponseWriter, r *http.Request) error {
	c, ok := s.publicClaims(w, r, links.Unsubscribe)
	if !ok {
		return nil
	}
	s.page(w, http.StatusOK, "unsubscribe", map[string]any{"Title": "Unsubscribe", "Workflow": c.Workflow})
	return nil
}

// oneClickUnsubscribe is POST /u/{token} (RFC 8058 one-click, or the confirm
// page's button): the subscriber stops receiving the workflow's emails
// (workflows[W].channels.email = false), recorded with actor public-page.
func (s *Server) oneClickUnsubscribe(w http.ResponseWriter, r *http.Request) error {
	c, ok := s.publicClaims(w, r, links.Unsubscribe)
	if !ok || !s.readPublicBody(w, r) {
		return nil
	}
	if !preferences.ValidWorkflowID(c.Workflow) {
		s.notFoundPage(w)
		return nil
	}
	body := []byte(`{"workflows":{"` + c.Workflow + `":{"channels":{"email":false}}}}`) // a valid workflow id needs no escaping
	if _, err := s.deps.Control.PatchPreferences(r.Context(), c.Tenant, c.Subscriber, body, events.ActorPublicPage); err != nil {
		s.errorPage(w, r, err)
		return nil
	}
	s.page(w, http.StatusOK, "unsubscribe", map[string]any{"Title": "Unsubscribed", "Workflow": c.Workflow, "Done": true})
	return nil
}

// preferenceBox is one checkbox of the preference page.
type preferenceBox struct {
	Value, ID, Label string
	Checked, Locked  bool
}

type preferenceRow struct {
	WorkflowID string
	// Name is the workflow's display name, its id when it declared none;
	// Description its sentence, or "".
	Name, Description string
	Critical          bool
	Boxes             []preferenceBox
}

type kindColumn struct{ Kind, Label string }

// preferenceState is what the preference page shows of a subscriber.
type preferenceState struct {
	doc    preferences.Doc
	listed []preferences.Listed
	kinds  []string
	// text holds each workflow's display name and description, by id.
	text map[string][2]string
}

func (s *Server) preferenceState(c links.Claims) (preferenceState, error) {
	var st preferenceState
	var err error
	if st.doc, err = s.deps.Control.Preferences(c.Tenant, c.Subscriber); err != nil {
		return st, err
	}
	wfs, err := s.deps.Control.PreferenceWorkflows(c.Tenant)
	if err != nil {
		return st, err
	}
	st.text = make(map[string][2]string, len(wfs))
	for _, wf := range wfs {
		st.listed = append(st.listed, preferences.Listed{WorkflowID: wf.WorkflowID, Defaults: wf.Defaults})
		st.text[wf.WorkflowID] = [2]string{wf.Name, wf.Description}
	}
	chs, err := s.deps.Control.Channels(c.Tenant)
	if err != nil {
		return st, err
	}
	for _, k := range preferences.Kinds {
		if slices.ContainsFunc(chs, func(ch projections.Channel) bool { return ch.Kind == k && ch.Enabled }) {
			st.kinds = append(st.kinds, k)
		}
	}
	if len(st.kinds) == 0 {
		st.kinds = preferences.Kinds
	}
	return st, nil
}

func (st preferenceState) view(saved bool) map[string]any {
	var cols []kindColumn
	for _, k := range st.kinds {
		cols = append(cols, kindColumn{k, kindLabels[k]})
	}
	var rows []preferenceRow
	for _, l := range st.listed {
		row := preferenceRow{WorkflowID: l.WorkflowID, Name: st.text[l.WorkflowID][0],
			Description: st.text[l.WorkflowID][1], Critical: l.Defaults.Critical}
		if row.Name == "" {
			row.Name = l.WorkflowID
		}
		for _, k := range st.kinds {
			row.Boxes = append(row.Boxes, preferenceBox{Value: l.WorkflowID + "/" + k, ID: "box-" + l.WorkflowID + "-" + k,
				Label: row.Name + ": " + kindLabels[k], Checked: preferences.Allows(st.doc, l.WorkflowID, l.Defaults, k),
				Locked: l.Defaults.Critical})
		}
		rows = append(rows, row)
	}
	return map[string]any{"Kinds": cols, "Rows": rows, "Saved": saved}
}

// preferencePage is GET /p/{token}: the tenant's workflows × the kinds
// of its enabled channels (every kind when it has none), each box on when
// a send would go out; critical workflows' boxes are on and locked.
func (s *Server) preferencePage(w http.ResponseWriter, r *http.Request) error {
	c, ok := s.publicClaims(w, r, links.Preferences)
	if !ok {
		return nil
	}
	st, err := s.preferenceState(c)
	if err != nil {
		s.errorPage(w, r, err)
		return nil
	}
	s.page(w, http.StatusOK, "preferences", st.view(false))
	return nil
}

// savePreferences is POST /p/{token}: the page's form. The boxes whose
// value changes are written through the same command as PATCH
// /v1/subscribers/{id}/preferences (preferences.PagePatch), actor
// public-page; the page is shown again with the result.
func (s *Server) savePreferences(w http.ResponseWriter, r *http.Request) error {
	c, ok := s.publicClaims(w, r, links.Preferences)
	if !ok || !s.readPublicBody(w, r) {
		return nil
	}
	st, err := s.preferenceState(c)
	if err != nil {
		s.errorPage(w, r, err)
		return nil
	}
	on := map[preferences.Toggle]bool{}
	for _, v := range r.PostForm["on"] {
		if wf, kind, ok := strings.Cut(v, "/"); ok {
			on[preferences.Toggle{Workflow: wf, Kind: kind}] = true
		}
	}
	body := preferences.PagePatch(st.doc, st.listed, st.kinds, on)
	if st.doc, err = s.deps.Control.PatchPreferences(r.Context(), c.Tenant, c.Subscriber, body, events.ActorPublicPage); err != nil {
		s.errorPage(w, r, err)
		return nil
	}
	s.page(w, http.StatusOK, "preferences", st.view(true))
	return nil
}

// docsURL is where the home page sends a reader for the documentation:
// the docs/ directory of the project's repository.
const docsURL = "https://github.com/heraldhq/herald/tree/main/docs"

// home answers GET /: a small page saying what runs here, so that a
// person who opens the server's address in a browser is not met by a
// JSON 404. It has no script (the same headers as the public pages).
func (s *Server) home(w http.ResponseWriter, _ *http.Request) error {
	setPublicHeaders(w)
	s.page(w, http.StatusOK, "home", map[string]any{"Title": "Herald", "Docs": docsURL})
	return nil
}
