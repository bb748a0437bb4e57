package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/preferences"

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
	Address string `json:"address"`
	// WorkflowID is the workflow of the attempt's run.
	WorkflowID        string             `json:"workflowId,omitempty"`
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
	v := deliveryView{DeliveryAttempt: d.DeliveryAttempt, Address: d.Address, WorkflowID: d.WorkflowID,
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

// deliveryStatuses are the statuses a delivery row takes.
var deliveryStatuses = []string{projections.DeliveryPending, projections.DeliverySent, projections.DeliveryFailed,
	projections.DeliverySkipped, events.ReportDelivered, events.ReportBounced, events.ReportComplained}

// maxChannelKeyBytes bounds a channelKey filter.
const maxChannelKeyBytes = 128

// deliveryFilter reads GET /v1/deliveries' filters: runId, subscriberId,
// workflowId, status, kind, channelKey, since, until (RFC 3339) and
// order (asc, the default, or desc).
func deliveryFilter(r *http.Request) (projections.DeliveryFilter, error) {
	q := r.URL.Query()
	f := projections.DeliveryFilter{RunID: q.Get("runId"), SubscriberID: q.Get("subscriberId"), WorkflowID: q.Get("workflowId"),
		Status: q.Get("status"), Kind: q.Get("kind"), ChannelKey: q.Get("channelKey")}
	var probs apierr.Problems
	checkIDFilters(r, &probs)
	if f.Status != "" && !slices.Contains(deliveryStatuses, f.Status) {
		probs.Add("status", "must be one of %s", strings.Join(deliveryStatuses, ", "))
	}
	if f.Kind != "" && !slices.Contains(preferences.Kinds, f.Kind) {
		probs.Add("kind", "must be one of %s", strings.Join(preferences.Kinds, ", "))
	}
	if v := f.ChannelKey; v != "" && (len(v) > maxChannelKeyBytes || !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl)) {
		probs.Add("channelKey", "must be at most %d bytes of printable text", maxChannelKeyBytes)
	}
	for _, b := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				probs.Add(b.name, "must be a time in RFC 3339, such as 2026-01-02T15:04:05Z")
			}
			*b.to = t
		}
	}
	desc, ok := orderOf(r)
	if !ok {
		probs.Add("order", "must be asc or desc")
	}
	f.Desc = desc
	return f, probs.Err()
}

// orderOf reads the order parameter of a list read oldest first by
// default: asc (or none) or desc; ok is false for anything else.
func orderOf(r *http.Request) (desc, ok bool) {
	switch r.URL.Query().Get("order") {
	case "", "asc":
		return false, true
	case "desc":
		return true, true
	}
	return false, false
}

// orderParam is orderOf for a list with no other filter: anything but
// asc or desc is a validation error.
func orderParam(r *http.Request) (bool, error) {
	desc, ok := orderOf(r)
	if !ok {
		var probs apierr.Problems
		probs.Add("order", "must be asc or desc")
		return false, probs.Err()
	}
	return desc, nil
}

// listDeliveries is GET /v1/deliveries: the tenant's delivery attempts in
// the order they were made (newest first with order=desc), narrowed by
// the filters of deliveryFilter. A filtered page reads a bounded number of
// rows, so it may end short, even empty, with a cursor to read on.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	f, err := deliveryFilter(r)
	if err != nil {
		return err
	}
	return servePage(s, w, r, func(p projections.Page) ([]projections.Delivery, string, error) {
		return s.deps.Store.DeliveriesWhere(tenantOf(r.Context()), f, p)
	}, newDeliveryView)
}
