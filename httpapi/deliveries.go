package httpapi

import (
	"net/http"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// deliver is POST /v1/deliver (internal: the send steps of engines that
// reach delivery through a delivery.Client). The body is a
// delivery.Request, validated by Deliver. It answers 200 with the
// delivery.Result, also for a repeat of a sent key; a failure is the
// delivery sentinel it wraps, answered with its code's status
// (no_channel, no_address, provider_rejected: 422; provider_unavailable:
// 502; delivery_in_progress: 409).
func (s *Server) deliver(w http.ResponseWriter, r *http.Request) error {
	var req delivery.Request
	if err := decode(w, r, &req); err != nil {
		return err
	}
	res, err := s.deps.Delivery.Deliver(r.Context(), tenantOf(r.Context()), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// deliveryView is one row of GET /v1/deliveries.
type deliveryView struct {
	events.DeliveryAttempt
	Address           string             `json:"address"`
	Status            string             `json:"status"`
	ProviderMessageID *string            `json:"providerMessageId"`
	Error             *deliveryErrorView `json:"error"`
	// Reason is why a skipped send was skipped; absent otherwise.
	Reason string `json:"reason,omitempty"`
	// Events are what the provider reported since, oldest first.
	Events    []deliveryEventView `json:"events"`
	CreatedAt string              `json:"createdAt"`
	UpdatedAt string              `json:"updatedAt"`
}

type deliveryEventView struct {
	Type   string `json:"type"`
	At     string `json:"at"`
	Detail string `json:"detail,omitempty"`
}

type deliveryErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newDeliveryView(d projections.Delivery) deliveryView {
	v := deliveryView{DeliveryAttempt: d.DeliveryAttempt, Address: d.Address,
		Status: d.Status, Reason: d.Reason, CreatedAt: ts(d.CreatedAt), UpdatedAt: ts(d.UpdatedAt),
		Events: make([]deliveryEventView, 0, len(d.Events))}
	for _, e := range d.Events {
		v.Events = append(v.Events, deliveryEventView{Type: e.Type, At: ts(e.At), Detail: e.Detail})
	}
	if d.ProviderMessageID != "" {
		v.ProviderMessageID = &d.ProviderMessageID
	}
	if d.Error != nil {
		v.Error = &deliveryErrorView{Code: d.Error.Code, Message: d.Error.Message}
	}
	return v
}

// listDeliveries is GET /v1/deliveries[?runId=]: the tenant's delivery
// attempts oldest first, or one run's.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, checkingQueryIDs(r, func(p projections.Page) ([]projections.Delivery, string, error) {
		return s.deps.Store.Deliveries(tenantOf(r.Context()), r.URL.Query().Get("runId"), p)
	}), newDeliveryView)
}
