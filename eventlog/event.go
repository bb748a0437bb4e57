package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

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
	if out, ok := appendEnvelope(make([]byte, 0, 96+len(ev.ID)+len(ev.Type)+len(ev.TenantID)+len(data)), ev, data); ok {
		return out, nil
	}
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

// appendEnvelope appends the envelope of ev with data as json.Marshal
// and envelope would write it, when its strings need no escaping and its
// time has a four-digit year, and reports whether it could.
func appendEnvelope(b []byte, ev Event, data []byte) ([]byte, bool) {
	if !safeString(ev.ID) || !safeString(ev.Type) || !safeString(ev.TenantID) ||
		ev.At.Year() < 0 || ev.At.Year() > 9999 {
		return nil, false
	}
	b = append(b, `{"id":"`...)
	b = append(b, ev.ID...)
	b = append(b, `","type":"`...)
	b = append(b, ev.Type...)
	b = append(b, `","tenantId":"`...)
	b = append(b, ev.TenantID...)
	b = append(b, `","at":"`...)
	b = ev.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	b = append(b, data...)
	return append(b, '}'), true
}

// safeString reports whether json.Marshal writes s as it is between
// quotes: printable ASCII, none of the characters it escapes.
func safeString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= utf8.RuneSelf, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// decodeRaw turns a stored message into an Event. The event's Data is a
// part of data, not a copy.
func decodeRaw(subject string, seq uint64, data []byte) (Event, error) {
	var ev Event
	if readEnvelope(data, &ev) {
		ev.Seq = seq
		ev.Subject = subject
		return ev, nil
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: #%d: %v", ErrBadEvent, seq, err)
	}
	ev.Seq = seq
	ev.Subject = subject
	return ev, nil
}

// readEnvelope reads data into ev when it is an envelope as envelope
// writes it (the fields in order, no space, strings without escapes, data
// valid JSON other than null), and reports whether it could: json.Unmarshal
// would have read such an envelope the same, in two passes over the whole
// message and a copy of the data. Anything else is left to json.Unmarshal.
func readEnvelope(data []byte, ev *Event) bool {
	rest, ok := bytes.CutPrefix(data, []byte(`{"id":`))
	if !ok {
		return false
	}
	if ev.ID, rest, ok = plainString(rest); !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"type":`)); !ok {
		return false
	}
	if ev.Type, rest, ok = plainString(rest); !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"tenantId":`)); !ok {
		return false
	}
	if ev.TenantID, rest, ok = plainString(rest); !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"at":"`)); !ok {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || ev.At.UnmarshalText(rest[:end]) != nil {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest[end+1:], []byte(`,"data":`)); !ok {
		return false
	}
	d, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok || len(d) == 0 || d[0] == 'n' || isSpace(d[0]) || isSpace(d[len(d)-1]) || !json.Valid(d) {
		return false
	}
	ev.Data = d[:len(d):len(d)]
	return true
}

// plainString reads a JSON string at the start of b that holds no escape
// and no control character, and is valid UTF-8: its value is its bytes.
// It returns the value and what follows it.
func plainString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	ascii := true
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			s := b[1:i]
			if !ascii && !utf8.Valid(s) {
				return "", nil, false
			}
			return string(s), b[i+1:], true
		case c == '\\' || c < 0x20:
			return "", nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", nil, false
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
