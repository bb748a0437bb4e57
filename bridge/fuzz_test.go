package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
)

// fuzzRegistry uses every step type and branches on the payload and on step
// outputs, so that arbitrary histories reach every replay path.
func fuzzRegistry() *bridge.Registry {
	flow := bridge.MustWorkflow("flow", func(ctx *bridge.Context, payload map[string]any) error {
		n, err := bridge.Run(ctx, "count", func(context.Context) (int, error) {
			if payload["fail"] == true {
				return 0, errors.New("asked to fail")
			}
			return len(payload), nil
		})
		if err != nil {
			return err
		}
		if n > 1 {
			if err := bridge.Delay(ctx, "pause", time.Duration(n)*time.Second); err != nil {
				return err
			}
		}
		ev, ok, err := bridge.WaitForEvent[json.RawMessage](ctx, "wait", "approved", time.Hour)
		if err != nil {
			return err
		}
		if !ok {
			_, err = bridge.Digest(ctx, "batch", 10*time.Minute, bridge.DigestKey("k"))
			return err
		}
		_, err = bridge.Send(ctx, "notify", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "n=" + strconv.Itoa(n), Body: string(ev)}, nil
		}, bridge.To("u2"))
		return err
	})
	crash := bridge.MustWorkflow("crash", func(ctx *bridge.Context, p struct {
		Mode string `json:"mode"`
	}) error {
		if p.Mode == "panic" {
			panic("crash")
		}
		return errors.New("crash")
	})
	return bridge.NewRegistry().MustRegister(flow, crash)
}

// FuzzHandler signs arbitrary bodies (or not) and checks the handler never
// panics and answers one of the documented statuses with a JSON body.
//
//	go test -fuzz=FuzzHandler ./bridge
func FuzzHandler(f *testing.F) {
	for _, seed := range []string{
		`{"action":"health"}`,
		`{"action":"discover"}`,
		`{"action":"execute","workflowId":"flow","runId":"run_1","payload":{},"subscriber":null,"steps":[]}`,
		`{"action":"execute","workflowId":"flow","payload":{"a":1,"b":2},"steps":[{"stepId":"count","type":"run","output":2}]}`,
		`{"action":"execute","workflowId":"flow","payload":{"fail":true},"steps":[]}`,
		`{"action":"execute","workflowId":"flow","steps":[{"stepId":"count","type":"run","output":0},{"stepId":"wait","type":"waitForEvent","output":{"ok":true}}]}`,
		`{"action":"execute","workflowId":"flow","steps":[{"stepId":"count","type":"run","output":0},{"stepId":"wait","type":"waitForEvent","output":null},{"stepId":"batch","type":"digest","output":{"count":1,"events":[]}}]}`,
		`{"action":"execute","workflowId":"flow","steps":[{"stepId":"wait","type":"run","output":0}]}`,
		`{"action":"execute","workflowId":"flow","steps":[{"stepId":"count","type":"delay","output":"x"}]}`,
		`{"action":"execute","workflowId":"flow","steps":[{"stepId":"count","type":"run","output":"x"}]}`,
		`{"action":"execute","workflowId":"crash","payload":{"mode":"panic"}}`,
		`{"action":"execute","workflowId":"nope"}`,
		`{"action":"execute","workflowId":"flow","payload":[]}`,
		`{"action":"launch"}`,
		`{"action":`,
		`null`,
		``,
	} {
		f.Add([]byte(seed), true)
	}
	f.Add([]byte(`{"action":"health"}`), false)

	h := bridge.Serve(fuzzRegistry(), bridge.Options{SigningKey: testKey, Now: clock, MaxBodyBytes: 4096})
	documented := map[int]bool{200: true, 400: true, 401: true, 404: true, 409: true, 413: true, 422: true, 500: true}

	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		if signed {
			req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(testNow.Unix(), 10))
			req.Header.Set(wire.HeaderSignature, wire.Sign(testKey, testNow.Unix(), body))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		if !documented[rec.Code] {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		if !signed && rec.Code != http.StatusUnauthorized {
			t.Fatalf("unsigned request answered %d", rec.Code)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", rec.Body.Bytes())
		}
		if rec.Code != http.StatusOK {
			var e wire.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Code == "internal" {
				t.Fatalf("error body %s for %q", rec.Body.Bytes(), body)
			}
		}
	})
}
