package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// Header names carried by every event message.
const (
	HeaderType   = "Herald-Type"
	HeaderTenant = "Herald-Tenant"
)

// Event is the envelope of every fact in the log, defined in package
// events so that pure folds over events need not import the log.
type Event = events.Event

// Record is one event to append.
type Record struct {
	// Subject is the aggregate subject (see Subject). Required.
	Subject string
	// Type is the past-tense event type, e.g. "SubscriberUpserted". Required.
	Type string
	// Tenant is the tenant id. Required.
	Tenant string
	// Data is marshalled to JSON as the event's data; a json.RawMessage
	// is taken as it is (the caller marshalled it).
	Data any
	// MsgID, when set, is the event's id and makes the stream store the
	// event once however often it is appended: inside the stream's
	// de-duplication window for a plain record; for a conditional one
	// (Expect) a repeat fails its expectation and is recognised as the
	// stored event by this id. Zero: a new id, no dedupe.
	MsgID string
	// Expect makes the append conditional on the subject's last sequence
	// being ExpectSeq (0: the subject is empty). Zero: unconditional.
	Expect    bool
	ExpectSeq uint64
	// At overrides the event time. Zero: now.
	At time.Time
}

// NewID returns a new unique id with the given prefix, e.g. "evt_…".
func NewID(prefix string) string { return prefix + nuid.Next() }

func (r Record) message() (*nats.Msg, error) {
	data, ok := r.Data.(json.RawMessage)
	if !ok || len(data) == 0 {
		var err error
		if data, err = json.Marshal(r.Data); err != nil {
			return nil, fmt.Errorf("eventlog: marshal %s: %w", r.Type, err)
		}
	}
	at := r.At
	if at.IsZero() {
		at = time.Now()
	}
	id := r.MsgID
	if id == "" {
		id = NewID("evt_")
	}
	body, err := envelope(Event{ID: id, Type: r.Type, TenantID: r.Tenant, At: at.UTC()}, data)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: r.Subject, Data: body, Header: nats.Header{
		HeaderType:   {r.Type},
		HeaderTenant: {r.Tenant},
	}}
	return msg, nil
}

// envelope marshals ev with data as its data, which is valid JSON already
// (marshalled by Record.message or by the caller). Marshalling the
// envelope with Data inside would validate and compact data a second
// time: the small envelope is marshalled with "data":null instead and
// data spliced in its place.
func envelope(ev Event, data []byte) ([]byte, error) {
	head, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	const tail = `null}`
	if !bytes.HasSuffix(head, []byte(tail)) {
		return nil, fmt.Errorf("eventlog: unexpected envelope encoding %q", head)
	}
	out := make([]byte, 0, len(head)-len(tail)+len(data)+1)
	out = append(out, head[:len(head)-len(tail)]...)
	out = append(out, data...)
	return append(out, '}'), nil
}

// decodeRaw turns a stored message into an Event.
func decodeRaw(subject string, seq uint64, data []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: #%d: %v", ErrBadEvent, seq, err)
	}
	ev.Seq = seq
	ev.Subject = subject
	return ev, nil
}
