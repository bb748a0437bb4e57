package devmail

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"
)

// routes is the HTTP API described in the package doc.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", handler(s.page))
	mux.Handle("GET /api/messages", handler(s.list))
	mux.Handle("GET /api/messages/{id}", handler(s.message))
	mux.Handle("DELETE /api/messages", handler(s.clear))
	return mux
}

// handler is an HTTP handler whose error is answered by ServeHTTP, the one
// place errors become statuses.
type handler func(w http.ResponseWriter, r *http.Request) error

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	err := h(w, r)
	if err == nil {
		return
	}
	status := http.StatusInternalServerError
	if errors.Is(err, errNotFound) {
		status = http.StatusNotFound
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func (s *Server) list(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string][]Message{"messages": s.inbox.Messages()})
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) error {
	m, ok := s.inbox.Get(r.PathValue("id"))
	if !ok {
		return errNotFound
	}
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) clear(w http.ResponseWriter, _ *http.Request) error {
	s.inbox.Clear()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
	return nil
}

func (s *Server) page(w http.ResponseWriter, _ *http.Request) error {
	var b bytes.Buffer
	err := pageTemplate.Execute(&b, struct {
		SMTPAddr string
		Messages []Message
	}{s.SMTPAddr(), s.inbox.Messages()})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
	return nil
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"join": strings.Join}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>Herald devmail ({{len .Messages}})</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .4em .6em; border-bottom: 1px solid #ddd; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: .6em; }
</style>
</head>
<body>
<h1>Herald devmail</h1>
<p>{{len .Messages}} message(s) caught on SMTP {{.SMTPAddr}}, newest first.
JSON: <a href="/api/messages">/api/messages</a>; empty with <code>curl -X DELETE …/api/messages</code>.</p>
<table>
<tr><th>Received</th><th>From</th><th>To</th><th>Subject</th></tr>
{{range .Messages}}<tr id="m{{.ID}}">
<td>{{.ReceivedAt.Format "2006-01-02 15:04:05"}}</td>
<td>{{.From}}</td>
<td>{{join .To ", "}}</td>
<td><details><summary>{{.Subject}}</summary>
<p>{{.ContentType}} · <a href="/api/messages/{{.ID}}">JSON</a></p>
<pre>{{.Body}}</pre></details></td>
</tr>
{{else}}<tr><td colspan="4">No messages yet.</td></tr>
{{end}}</table>
</body>
</html>
`))
