package testapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/internal/testapi"
)

// api answers like Herald: /v1/items lists three items two a page, /v1/bad
// is a 422 with details, /v1/raw a 502 whose body is not the contract's;
// it echoes the Authorization and Content-Type it got in headers.
func api(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Auth", r.Header.Get("Authorization"))
		w.Header().Set("X-Type", r.Header.Get("Content-Type"))
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/items":
			if r.URL.Query().Get("cursor") == "" {
				fmt.Fprint(w, `{"data":[{"id":"a"},{"id":"b"}],"nextCursor":"c+1"}`)
			} else if r.URL.Query().Get("cursor") == "c+1" && r.URL.Query().Get("limit") == "2" {
				fmt.Fprint(w, `{"data":[{"id":"c"}],"nextCursor":null}`)
			} else {
				http.Error(w, "bad cursor "+r.URL.RawQuery, http.StatusBadRequest)
			}
		case "/v1/bad":
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"error":{"code":"validation_failed","message":"fields are at fault","details":[{"field":"name","problem":"is required"}]}}`)
		case "/v1/raw":
			http.Error(w, "upstream down", http.StatusBadGateway)
		default:
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDoDecodesAnswersAndErrors(t *testing.T) {
	srv := api(t)
	c := testapi.New(srv.URL, "hk_key")
	ctx := context.Background()

	var out struct{ Name string }
	if st, err := c.Do(ctx, "POST", "/v1/echo", map[string]string{"name": "x"}, &out); err != nil || st != 200 || out.Name != "x" {
		t.Fatalf("echo: %d %v %+v", st, err, out)
	}

	st, err := c.Do(ctx, "POST", "/v1/bad", nil, nil)
	var e *testapi.Error
	if !errors.As(err, &e) || st != 422 || e.Status != 422 || e.Code != "validation_failed" ||
		len(e.Details) != 1 || e.Details[0] != (testapi.FieldProblem{Field: "name", Problem: "is required"}) {
		t.Fatalf("422: %d %#v", st, err)
	}
	if got := err.Error(); got != "POST /v1/bad: 422 validation_failed: fields are at fault" {
		t.Fatalf("message %q", got)
	}

	st, err = c.Do(ctx, "GET", "/v1/raw", nil, nil)
	if !errors.As(err, &e) || st != 502 || e.Code != "" || string(e.Body) != "upstream down\n" {
		t.Fatalf("502: %d %#v", st, err)
	}
}

func TestSendSetsAuthAndContentType(t *testing.T) {
	srv := api(t)
	ctx := context.Background()
	r, err := testapi.New(srv.URL, "hk_key").Send(ctx, "PUT", "/v1/echo", []byte(`{"raw":true}`))
	if err != nil || r.Header.Get("X-Auth") != "Bearer hk_key" || r.Header.Get("X-Type") != "application/json" ||
		string(r.Body) != `{"raw":true}` {
		t.Fatalf("%v %v %s", err, r.Header, r.Body)
	}
	r, err = testapi.New(srv.URL, "").Send(ctx, "GET", "/v1/echo", []byte(nil))
	if err != nil || r.Header.Get("X-Auth") != "" || r.Header.Get("X-Type") != "" || len(r.Body) != 0 {
		t.Fatalf("no key, no body: %v %v %s", err, r.Header, r.Body)
	}
}

func TestAllFollowsTheCursor(t *testing.T) {
	srv := api(t)
	items, err := testapi.All[struct{ ID string }](context.Background(), testapi.New(srv.URL, "k"), "/v1/items?limit=2")
	if err != nil || len(items) != 3 || items[0].ID != "a" || items[2].ID != "c" {
		t.Fatalf("%+v %v", items, err)
	}
}
