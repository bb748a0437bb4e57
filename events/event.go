package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrBadEvent is returned when a stored message is not an event envelope
// or its data does not decode into the payload its type names.
var ErrBadEvent = errors.New("events: malformed event")

// Event is the envelope of every fact in the log. Data holds the
// type-specific payload (one of this package's …Data types, named by
// Type); secrets inside it are already sealed.
//
// The envelope depends on nothing but the standard library, so the pure
// folds over events (package runstate) stay free of the log's transport.
// Package eventlog stores and reads events; its Event is this type.
type Event struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	TenantID string          `json:"tenantId"`
	At       time.Time       `json:"at"`
	Data     json.RawMessage `json:"data"`

	// Seq and Subject are where the event is stored; set when read.
	Seq     uint64 `json:"-"`
	Subject string `json:"-"`
}

// Decode unmarshals the event's Data into v. A failure wraps ErrBadEvent.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("%w: %s #%d: %v", ErrBadEvent, e.Type, e.Seq, err)
	}
	return nil
}

// Line is an event as `herald audit` and GET /v1/admin/events show it,
// one JSON line each: the stored envelope and where it is stored. A
// reader of those lines decodes each into a Line.
type Line struct {
	Seq      uint64          `json:"seq"`
	Subject  string          `json:"subject"`
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	TenantID string          `json:"tenantId"`
	At       time.Time       `json:"at"`
	Data     json.RawMessage `json:"data"`
}

// MarshalLine encodes the event as one line of JSON (no newline): the
// envelope (id, type, tenantId, at, data) with seq and subject. Data is
// the stored data as is, so sealed secrets stay sealed.
func (e Event) MarshalLine() ([]byte, error) {
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	return json.Marshal(Line{Seq: e.Seq, Subject: e.Subject, ID: e.ID, Type: e.Type, TenantID: e.TenantID,
		At: e.At, Data: data})
}
