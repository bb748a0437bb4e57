package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/delivery"
)

// A failure of the delivery service crosses POST /v1/deliver intact: the
// delivery.Client reads the answer this API writes for it as an error
// that delivery.Classify classifies as the service's own (same code, same
// terminality) and that wraps the same sentinel.
func TestDeliverFailuresSurviveTheAPI(t *testing.T) {
	s := &Server{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var answer error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, answer)
	}))
	t.Cleanup(srv.Close)
	client := delivery.NewClient(srv.URL, "tok", 1)
	req := delivery.Request{IdempotencyKey: "run_1:s", RunID: "run_1", StepID: "s", SubscriberID: "ada",
		Channel: "email", Content: json.RawMessage(`{"subject":"s","body":"b"}`)}

	sentinels := []error{delivery.ErrNoChannel, delivery.ErrNoAddress, delivery.ErrProviderRejected,
		delivery.ErrProviderUnavailable, delivery.ErrInProgress, delivery.ErrInvalidRequest}
	for _, kind := range sentinels {
		for _, err := range []error{kind, fmt.Errorf("%w: details", kind)} {
			answer = err
			_, got := client.Deliver(context.Background(), "ten_1", req)
			want, have := delivery.Classify(err), delivery.Classify(got)
			if have.Code != want.Code || have.Terminal != want.Terminal || !errors.Is(got, kind) {
				t.Errorf("%v: through the API %v classified %+v, want %+v", err, got, have, want)
			}
		}
	}
	// The service's validation error, as Deliver returns it.
	answer = delivery.Request{}.Validate()
	_, got := client.Deliver(context.Background(), "ten_1", req)
	if want, have := delivery.Classify(answer), delivery.Classify(got); have.Code != want.Code || have.Terminal != want.Terminal ||
		!errors.Is(got, delivery.ErrInvalidRequest) {
		t.Errorf("validation: through the API %v classified %+v, want %+v", got, have, want)
	}
}
