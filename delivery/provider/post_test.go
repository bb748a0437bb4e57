package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// Decode reads an id only from a whole answer: a body cut short fails
// with its read error, before any decoding.
func TestAnswerDecode(t *testing.T) {
	var v struct {
		ID string `json:"id"`
	}
	if err := (Answer{Body: []byte(`{"id":"m1"}`)}).Decode(&v); err != nil || v.ID != "m1" {
		t.Fatalf("a whole answer: %q, %v", v.ID, err)
	}
	v.ID = ""
	cut := Answer{Body: []byte(`{"id":"m2"}`), ReadErr: io.ErrUnexpectedEOF}
	if err := cut.Decode(&v); !errors.Is(err, io.ErrUnexpectedEOF) || v.ID != "" {
		t.Fatalf("an answer cut short: %q, %v", v.ID, err)
	}
	if err := (Answer{Body: []byte(`<html>`)}).Decode(&v); err == nil {
		t.Fatal("a body that is no JSON was decoded")
	}
}

func TestRefusalKind(t *testing.T) {
	for status, want := range map[int]error{
		400: ErrRejected, 413: ErrRejected,
		401: ErrNotSent, 403: ErrNotSent, 404: ErrNotSent, 422: ErrNotSent, 429: ErrNotSent, 500: ErrNotSent, 503: ErrNotSent,
	} {
		if got := RefusalKind(status); got != want {
			t.Errorf("RefusalKind(%d) = %v, want %v", status, got, want)
		}
	}
}

// The webhook's query is kept as configured, with the provider's
// parameters set over it; apiBaseUrl replaces only scheme and host.
func TestNewWebhookHTTP(t *testing.T) {
	config := map[string]any{"webhookUrl": "https://hooks.example.com/h/tok?sig=s&b=1", "apiBaseUrl": "http://127.0.0.1:9"}
	for _, tc := range []struct {
		query url.Values
		want  string
	}{
		{nil, "http://127.0.0.1:9/h/tok?sig=s&b=1"},
		{url.Values{"wait": {"true"}, "b": {"2"}}, "http://127.0.0.1:9/h/tok?b=2&sig=s&wait=true"},
	} {
		h, err := NewWebhookHTTP("chat", config, Deps{}, tc.query)
		if err != nil || h.Endpoint != tc.want || h.Name != "chat" {
			t.Errorf("query %v: %+v, %v; want endpoint %s", tc.query, h, err, tc.want)
		}
	}
	if _, err := NewWebhookHTTP("chat", map[string]any{}, Deps{}, nil); err == nil {
		t.Error("no webhookUrl was taken")
	}
}

// PostJSON sends the value's JSON as application/json unless the caller
// names its own Content-Type; a value JSON cannot hold is refused for good
// and never sent.
func TestPostJSON(t *testing.T) {
	type got struct{ contentType, auth, body string }
	seen := make(chan got, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- got{r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	h := HTTP{Name: "p", Endpoint: srv.URL, Client: srv.Client()}
	ctx := context.Background()

	ans, err := h.PostJSON(ctx, http.Header{"Authorization": {"Bearer k"}}, map[string]string{"to": "a"})
	if err != nil || ans.Status != http.StatusAccepted {
		t.Fatalf("PostJSON: %+v, %v", ans, err)
	}
	if g := <-seen; g != (got{"application/json", "Bearer k", `{"to":"a"}`}) {
		t.Fatalf("request %+v", g)
	}
	if _, err := h.PostJSON(ctx, http.Header{"Content-Type": {"application/json; charset=utf-8"}}, []int{1}); err != nil {
		t.Fatal(err)
	}
	if g := <-seen; g.contentType != "application/json; charset=utf-8" || g.body != "[1]" {
		t.Fatalf("request with its own Content-Type %+v", g)
	}

	if _, err := h.PostJSON(ctx, nil, map[string]any{"c": make(chan int)}); !errors.Is(err, ErrRejected) || errors.Is(err, ErrNotSent) {
		t.Fatalf("a value JSON cannot hold: %v", err)
	}
	select {
	case g := <-seen:
		t.Fatalf("an unencodable value was sent: %+v", g)
	default:
	}
}
