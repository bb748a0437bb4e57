package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, ctx context.Context, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	return DoHTTP(http.DefaultClient, req)
}

func TestDoHTTPTellsWhetherTheRequestLeft(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()

	resp, err := post(t, context.Background(), srv.URL+"/answer")
	if err != nil || resp.StatusCode != http.StatusTeapot {
		t.Fatalf("an answer: %v %v", resp, err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = post(t, ctx, srv.URL+"/hang")
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotSent) {
		t.Fatalf("timeout after the request was written: %v", err)
	}
	if strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("the error names the URL: %v", err)
	}

	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := post(t, done, srv.URL+"/answer"); !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context: %v", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if _, err := post(t, context.Background(), closed.URL); !errors.Is(err, ErrNotSent) {
		t.Fatalf("a refused connection: %v", err)
	}
}

func TestBaseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"":                         "https://default.example",
		"https://api.example.com":  "https://api.example.com",
		"http://127.0.0.1:8080/":   "http://127.0.0.1:8080",
		"https://eu.example.com:1": "https://eu.example.com:1",
	} {
		got, err := BaseURL("apiBaseUrl", raw, "https://default.example")
		if err != nil || got != want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, bad := range []string{
		"api.example.com", "ftp://api.example.com", "https://api.example.com/v1", "https://u:p@api.example.com",
		"https://api.example.com?x=1", "https:///nohost",
	} {
		_, err := BaseURL("apiBaseUrl", bad, "")
		if err == nil || !strings.HasPrefix(err.Error(), "apiBaseUrl: ") || strings.Contains(err.Error(), bad) {
			t.Errorf("BaseURL(%q) error %v: want one naming the field, not the value", bad, err)
		}
	}
}

// ConfigBaseURL is the override of the config, checked, or the default;
// a value that is no string or no base URL is an error naming the field.
func TestConfigBaseURL(t *testing.T) {
	const def = "https://default.example"
	for name, tc := range map[string]struct {
		config map[string]any
		want   string
	}{
		"absent":   {map[string]any{}, def},
		"override": {map[string]any{"apiBaseUrl": "http://127.0.0.1:8080/"}, "http://127.0.0.1:8080"},
	} {
		if got, err := ConfigBaseURL(tc.config, "apiBaseUrl", def); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, tc.want)
		}
	}
	for name, v := range map[string]any{"a number": 3.0, "a path": "https://api.example.com/v1"} {
		if _, err := ConfigBaseURL(map[string]any{"apiBaseUrl": v}, "apiBaseUrl", def); err == nil || !strings.HasPrefix(err.Error(), "apiBaseUrl: ") {
			t.Errorf("%s: error %v, want one naming the field", name, err)
		}
	}
}

func TestConfigString(t *testing.T) {
	config := map[string]any{"a": "x", "n": 3.0, "empty": "", "null": nil}
	if s, err := ConfigString(config, "a", true); s != "x" || err != nil {
		t.Fatalf("a = %q, %v", s, err)
	}
	if s, err := ConfigString(config, "missing", false); s != "" || err != nil {
		t.Fatalf("an absent optional field: %q, %v", s, err)
	}
	for _, f := range []string{"missing", "empty", "null", "n"} {
		if _, err := ConfigString(config, f, true); err == nil || !strings.HasPrefix(err.Error(), f+": ") {
			t.Errorf("required %s: %v", f, err)
		}
	}
	if _, err := ConfigString(config, "n", false); err == nil {
		t.Error("a number was taken for a string")
	}
}
