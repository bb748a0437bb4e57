package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

// DeliverRequest is the body of POST /v1/deliver.
type DeliverRequest struct {
	IdempotencyKey string           `json:"idempotencyKey"`
	RunID          string           `json:"runId"`
	StepID         string           `json:"stepId"`
	SubscriberID   string           `json:"subscriberId"`
	Channel        string           `json:"channel"`
	Content        wire.SendContent `json:"content"`
}

// Deliverer hands a send step to delivery.
type Deliverer interface {
	// Deliver sends once per req.IdempotencyKey and returns the result. A
	// failure is a *DeliveryError saying whether retrying can help.
	Deliver(ctx context.Context, tenant string, req DeliverRequest) (wire.SendResult, error)
}

// DeliveryError is a failed delivery.
type DeliveryError struct {
	// Terminal: retrying cannot help (no_channel, no_address,
	// provider_rejected); otherwise the step is retried with backoff.
	Terminal bool
	Code     string
	Message  string
}

func (e *DeliveryError) Error() string { return e.Code + ": " + e.Message }

// HTTPDeliverer calls POST /v1/deliver of a herald API with the internal
// token. It is safe for concurrent use.
type HTTPDeliverer struct {
	// BaseURL is the API's base URL, e.g. http://127.0.0.1:8080. Required.
	BaseURL string
	// Token is the internal token. Required.
	Token string
	// Client sends the requests. Zero: a client with a 60s timeout.
	Client *http.Client
}

var defaultDeliverClient = &http.Client{Timeout: 60 * time.Second}

// Deliver implements Deliverer. Statuses: 200 a SendResult; 422 terminal
// with the body's code; anything else (409 in progress, 502, network) is
// retried.
func (d *HTTPDeliverer) Deliver(ctx context.Context, tenant string, req DeliverRequest) (wire.SendResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return wire.SendResult{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, d.BaseURL+"/v1/deliver", bytes.NewReader(body))
	if err != nil {
		return wire.SendResult{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("x-herald-internal-token", d.Token)
	hreq.Header.Set("x-herald-tenant-id", tenant)
	client := d.Client
	if client == nil {
		client = defaultDeliverClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return wire.SendResult{}, ctx.Err()
		}
		return wire.SendResult{}, &DeliveryError{Code: "delivery_unreachable", Message: err.Error()}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		var res wire.SendResult
		if err := json.Unmarshal(data, &res); err != nil {
			return res, &DeliveryError{Code: "delivery_invalid_answer", Message: err.Error()}
		}
		return res, nil
	}
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(data, &eb)
	de := &DeliveryError{Code: eb.Error.Code, Message: eb.Error.Message,
		Terminal: resp.StatusCode == http.StatusUnprocessableEntity}
	if de.Code == "" {
		de.Code = "delivery_failed"
	}
	if de.Message == "" {
		de.Message = fmt.Sprintf("delivery answered %d", resp.StatusCode)
	}
	return wire.SendResult{}, de
}

// deliveryFailure reads a Deliverer error.
func deliveryFailure(err error) *DeliveryError {
	var de *DeliveryError
	if errors.As(err, &de) {
		return de
	}
	return &DeliveryError{Code: "delivery_failed", Message: err.Error()}
}
