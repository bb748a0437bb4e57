package engine

import (
	"context"

	"github.com/heraldhq/herald/delivery"
)

// Deliverer hands a send step to delivery: *delivery.Service in a process
// that serves deliveries, *delivery.Client to reach another one.
type Deliverer interface {
	// Deliver sends req once per req.IdempotencyKey and returns the
	// result. A failure is read with delivery.Classify: terminal fails
	// the run with its code; otherwise the step is retried.
	Deliver(ctx context.Context, tenant string, req delivery.Request) (delivery.Result, error)
}
