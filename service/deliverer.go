package service

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/engine"
)

// localDeliverer hands the engine's send steps to the delivery service of
// the same process: what POST /v1/deliver does, without an HTTP round trip
// to itself (JSON both ways, the router, auth). Its outcomes are
// those engine.HTTPDeliverer reads from the endpoint: the same codes, the
// same terminal failures (the endpoint's 422s), everything else retried.
type localDeliverer struct {
	svc *delivery.Service
}

var _ engine.Deliverer = localDeliverer{}

// deliveryCodes are the failure codes of POST /v1/deliver (httpapi's
// status table), terminal ones first.
var deliveryCodes = []struct {
	kind     error
	code     string
	terminal bool
}{
	{delivery.ErrNoChannel, "no_channel", true},
	{delivery.ErrNoAddress, "no_address", true},
	{delivery.ErrProviderRejected, "provider_rejected", true},
	{delivery.ErrInvalidRequest, "validation_failed", true},
	{delivery.ErrProviderUnavailable, "provider_unavailable", false},
	{delivery.ErrInProgress, "delivery_in_progress", false},
}

// Deliver implements engine.Deliverer.
func (d localDeliverer) Deliver(ctx context.Context, tenant string, req engine.DeliverRequest) (wire.SendResult, error) {
	res, err := d.svc.Deliver(ctx, tenant, delivery.Request{
		IdempotencyKey: req.IdempotencyKey, RunID: req.RunID, StepID: req.StepID,
		SubscriberID: req.SubscriberID, Channel: req.Channel,
		Subject: req.Content.Subject, Body: req.Content.Body,
	})
	if err == nil {
		return wire.SendResult{AttemptID: res.AttemptID, Status: res.Status, ProviderMessageID: res.ProviderMessageID}, nil
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return wire.SendResult{}, ctx.Err()
	}
	for _, c := range deliveryCodes {
		if errors.Is(err, c.kind) {
			return wire.SendResult{}, &engine.DeliveryError{Terminal: c.terminal, Code: c.code, Message: err.Error()}
		}
	}
	// The endpoint answers 500 "internal error" and keeps the cause in its
	// log; here the cause goes with the retried step.
	return wire.SendResult{}, &engine.DeliveryError{Code: "delivery_failed", Message: err.Error()}
}
