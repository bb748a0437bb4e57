package delivery_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// TestClientReadsSkippedAndInvalidContent: through POST /v1/deliver, the
// Client answers a skipped send as the Service does, and classifies
// invalid content as terminal invalid_content.
func TestClientReadsSkippedAndInvalidContent(t *testing.T) {
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	c := delivery.NewClient(f.h.URL(), f.h.InternalToken(), 1)
	req := request("run_cl:s")
	req.SubscriberID = "nobody"
	res, err := c.Deliver(context.Background(), f.tenant, req)
	if err != nil || res.Status != delivery.StatusSkipped || res.Reason != delivery.ReasonNoAddress || res.AttemptID == "" {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	req = request("run_cl:bad")
	req.Content = []byte(`{"body":"no subject"}`)
	_, err = c.Deliver(context.Background(), f.tenant, req)
	if fl := delivery.Classify(err); !errors.Is(err, delivery.ErrInvalidContent) || fl.Code != "invalid_content" || !fl.Terminal {
		t.Fatalf("invalid content: %v (%+v)", err, fl)
	}
	if r := f.deliver(map[string]any{"idempotencyKey": "a:b", "runId": "a", "stepId": "b", "subscriberId": "ada",
		"channel": "email", "content": map[string]any{"subject": "s"}}); r.Status != http.StatusUnprocessableEntity ||
		r.ErrorCode() != "invalid_content" {
		t.Fatalf("POST /v1/deliver: %d %s", r.Status, r.Body)
	}
}
