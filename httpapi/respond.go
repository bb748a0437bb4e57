package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ts formats a timestamp as the API shows it: RFC 3339, UTC, milliseconds.
func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// tsPtr formats an optional timestamp; nil stays null.
func tsPtr(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := ts(*t)
	return &s
}

// list is the body of every paged list.
type list[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

func newList[T any](data []T, next string) list[T] {
	if data == nil {
		data = []T{}
	}
	l := list[T]{Data: data}
	if next != "" {
		l.NextCursor = &next
	}
	return l
}

// mapSlice converts a slice element by element.
func mapSlice[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, a := range in {
		out[i] = f(a)
	}
	return out
}

// serveOne answers a GET of one resource: it makes the read see every
// write acknowledged before it (see caughtUp), reads the resource and
// writes its view.
func serveOne[T, V any](s *Server, w http.ResponseWriter, r *http.Request, read func() (T, error), view func(T) V) error {
	if err := s.caughtUp(r); err != nil {
		return err
	}
	v, err := read()
	return reply(w, http.StatusOK, v, err, view)
}

// serveByPath serves, as serveOne does, the tenant's resource that read
// returns for the path variable name: the handler of a GET naming its
// resource by one path variable.
func serveByPath[T, V any](s *Server, w http.ResponseWriter, r *http.Request, name string,
	read func(tenant, id string) (T, error), view func(T) V) error {
	id, err := pathVar(r, name)
	if err != nil {
		return err
	}
	return serveOne(s, w, r, func() (T, error) { return read(tenantOf(r.Context()), id) }, view)
}

// reply writes view(v) with status when err is nil; it returns err.
func reply[T, V any](w http.ResponseWriter, status int, v T, err error, view func(T) V) error {
	if err != nil {
		return err
	}
	writeJSON(w, status, view(v))
	return nil
}

// noContent answers 204 to a command that returned err nil, else returns
// err.
func noContent(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// removeByPath answers 204 once remove, a command taking the request's
// tenant and the path variable name, succeeded: the handler of a DELETE
// naming its resource by one path variable.
func removeByPath(w http.ResponseWriter, r *http.Request, name string, remove func(ctx context.Context, tenant, id string) error) error {
	id, err := pathVar(r, name)
	if err != nil {
		return err
	}
	return noContent(w, remove(r.Context(), tenantOf(r.Context()), id))
}
