package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
)

// maxBulkBody is the largest body of a bulk request: a thousand
// subscribers of a few KiB each, or a hundred triggers.
const maxBulkBody = 8 << 20

// bulkTriggerParallel is how many triggers of one bulk request run at once.
const bulkTriggerParallel = 8

// bodyTooLargeError is a bulk body over its bound: 413 body_too_large like
// any other body, with the bound in its message.
type bodyTooLargeError struct{ limit int }

func (e bodyTooLargeError) Error() string {
	return fmt.Sprintf("request body is larger than %d MiB", e.limit>>20)
}

func (e bodyTooLargeError) Unwrap() error { return errBodyTooLarge }

// decodeBulk reads a bulk request's body (at most maxBulkBody bytes) into
// v strictly, as decode does, and checks the list it holds (items, v's
// one field, named field) has 1 to max items.
func decodeBulk(w http.ResponseWriter, r *http.Request, v any, field string, items *[]json.RawMessage, max int) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBulkBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return bodyTooLargeError{maxBulkBody}
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalidJSON, err)
	}
	if !decodeList(data, field, items) {
		*items = nil
		if err := decodeBytes(data, v); err != nil {
			return err
		}
	}
	return control.CheckBulkCount(field, len(*items), max)
}

// decodeList decodes data, an object of the one field named field (a
// list), into items, and reports whether it could. It is decodeBytes' fast
// path for a body it accepts: a check of its validity, a walk over its
// keys and the decoding of the list alone, instead of four passes and a
// tree of every value. A body it cannot decode is left to
// decodeBytes, which names the problem; one it decodes, decodeBytes would
// have decoded the same.
func decodeList(data []byte, field string, items *[]json.RawMessage) bool {
	if !isObject(data) || !json.Valid(data) {
		return false
	}
	var list []byte // the last of the field's values, as json.Unmarshal takes the last
	if !objectKeys(data, func(k, v []byte) bool {
		list = v
		return string(k) == field
	}) || list == nil {
		return false
	}
	return json.Unmarshal(list, items) == nil
}

// objectKeys calls f with each key of the JSON object data and its value's
// text, in order, and reports whether data is an object whose keys hold no
// escape and f accepted them all. data must be valid JSON: of anything
// else the answer means nothing.
func objectKeys(data []byte, f func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	if i = skipSpace(data, i+1); i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) && data[i] == '"' {
		end := i + 1
		for end < len(data) && data[end] != '"' && data[end] != '\\' {
			end++
		}
		if end >= len(data) || data[end] != '"' {
			return false
		}
		key := data[i+1 : end]
		if i = skipSpace(data, end+1); i >= len(data) || data[i] != ':' {
			return false
		}
		start := skipSpace(data, i+1)
		if i = skipValue(data, start); i < 0 || !f(key, data[start:i]) {
			return false
		}
		if i = skipSpace(data, i); i >= len(data) {
			return false
		}
		switch data[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(data, i+1)
		default:
			return false
		}
	}
	return false
}

// skipSpace returns the index of the first byte of data from i on that is
// not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the valid JSON value starting at
// data[i], or -1 when data ends first.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if i >= len(data) {
				return -1
			}
		case '{', '[':
			depth++
			continue
		case '}', ']':
			depth--
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
			continue
		default:
			if depth == 0 {
				// A literal: true, false, null or a number.
				for i < len(data) && !strings.ContainsRune(",}] \t\n\r", rune(data[i])) {
					i++
				}
				return i
			}
			continue
		}
		if depth == 0 {
			return i + 1
		}
	}
	return -1
}

// isObject reports whether JSON text starts as an object.
func isObject(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && t[0] == '{'
}

// decodeItem decodes one item of a bulk request as decode decodes a whole
// body, except that an item must be an object.
func decodeItem(raw json.RawMessage, v any) error {
	if !isObject(raw) {
		var p apierr.Problems
		p.Add("item", "must be a JSON object")
		return p.Err()
	}
	return decodeBytes(raw, v)
}

// itemError is the error part of a bulk item's result: the status and
// body a single request would have answered. An internal error is logged
// as the single request's would be.
func (s *Server) itemError(r *http.Request, err error) (int, *errorDetail) {
	status, d := describe(err)
	if status >= http.StatusInternalServerError {
		s.logger.Error("bulk item failed", "route", r.URL.Path, "tenant", tenantOf(r.Context()), "err", err)
	}
	return status, &d
}

// bulkSubscriberItem is one item of POST /v1/subscribers/bulk: the body of
// PUT /v1/subscribers/{externalId}, its id, and topics to subscribe to.
type bulkSubscriberItem struct {
	SubscriberID string                     `json:"subscriberId"`
	Contacts     map[string]json.RawMessage `json:"contacts"`
	Locale       json.RawMessage            `json:"locale"`
	Attributes   json.RawMessage            `json:"attributes"`
	Timezone     json.RawMessage            `json:"timezone"`
	Topics       []string                   `json:"topics"`
}

// bulkSubscriberResult is one item's outcome: the status the single PUT
// would have answered, and its error body when it failed.
type bulkSubscriberResult struct {
	SubscriberID *string      `json:"subscriberId"`
	Status       int          `json:"status"`
	Error        *errorDetail `json:"error,omitempty"`
}

// itemID returns the subscriberId an item that did not decode names, or
// nil (see echoID).
func itemID(raw json.RawMessage) *string {
	var v struct {
		SubscriberID any `json:"subscriberId"`
	}
	if json.Unmarshal(raw, &v) == nil {
		if s, ok := v.SubscriberID.(string); ok {
			return echoID(s)
		}
	}
	return nil
}

// echoID returns the subscriberId an item's result repeats: a valid id,
// bounded, or nil. An invalid one (any length, any bytes) is not echoed,
// as the single routes quote no id they refuse: the item's place in the
// results names it.
func echoID(id string) *string {
	if !control.ValidExternalID(id) {
		return nil
	}
	return &id
}

// decodeSubscriberItem decodes one item of POST /v1/subscribers/bulk as
// decodeItem does. Its fast path decodes an item into it, then walks its
// keys without allocating, where decodeItem reads it four times and builds
// a tree of its values; an item it cannot read so (a field it does not
// know or whose name holds an escape, a value of the wrong type, not an
// object) goes to decodeItem, which names the problem.
func decodeSubscriberItem(raw json.RawMessage, it *bulkSubscriberItem) error {
	if isObject(raw) && json.Unmarshal(raw, it) == nil && objectKeys(raw, knownField) {
		return nil
	}
	*it = bulkSubscriberItem{}
	return decodeItem(raw, it)
}

// knownField reports whether an item's field is one of
// bulkSubscriberItem's (names are case-sensitive).
func knownField(key, _ []byte) bool {
	switch string(key) {
	case "subscriberId", "contacts", "locale", "attributes", "timezone", "topics":
		return true
	}
	return false
}

func (s *Server) bulkSubscribers(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Subscribers []json.RawMessage `json:"subscribers"`
	}
	if err := decodeBulk(w, r, &req, "subscribers", &req.Subscribers, control.MaxBulkSubscribers); err != nil {
		return err
	}
	out := make([]bulkSubscriberResult, len(req.Subscribers))
	var items []control.BulkSubscriber
	var index []int
	for i, raw := range req.Subscribers {
		var it bulkSubscriberItem
		if err := decodeSubscriberItem(raw, &it); err != nil {
			out[i].SubscriberID = itemID(raw)
			out[i].Status, out[i].Error = s.itemError(r, err)
			continue
		}
		out[i].SubscriberID = echoID(it.SubscriberID)
		items = append(items, control.BulkSubscriber{ExternalID: it.SubscriberID, Topics: it.Topics,
			Input: control.SubscriberInput{Contacts: it.Contacts, Locale: it.Locale, Attributes: it.Attributes,
				Timezone: it.Timezone}})
		index = append(index, i)
	}
	if len(items) > 0 {
		res, err := s.deps.Control.UpsertSubscribers(r.Context(), tenantOf(r.Context()), items)
		if err != nil {
			return err
		}
		for k, i := range index {
			if res[k].Err != nil {
				out[i].Status, out[i].Error = s.itemError(r, res[k].Err)
				continue
			}
			out[i].Status = createdOr(res[k].Created)
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Results []bulkSubscriberResult `json:"results"`
	}{out})
	return nil
}

// bulkTriggerOutcome is one trigger of a bulk request, done.
type bulkTriggerOutcome struct {
	res control.TriggerResult
	err error
}

// bulkEvents triggers each item as POST /v1/events would, a few at once,
// and answers each item's outcome in order, streamed as they finish.
func (s *Server) bulkEvents(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := decodeBulk(w, r, &req, "events", &req.Events, control.MaxBulkTriggers); err != nil {
		return err
	}
	ctx, tenant := r.Context(), tenantOf(r.Context())
	done := make([]chan bulkTriggerOutcome, len(req.Events))
	for i := range done {
		done[i] = make(chan bulkTriggerOutcome, 1)
	}
	sem := make(chan struct{}, bulkTriggerParallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for i, raw := range req.Events {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer func() {
					// A panic fails its item, as it fails a single request,
					// not the process.
					if p := recover(); p != nil {
						s.logger.Error("panic serving a bulk trigger", "path", r.URL.Path, "item", i,
							"panic", p, "stack", string(debug.Stack()))
						done[i] <- bulkTriggerOutcome{err: errors.New("panic")}
					}
				}()
				var tr triggerRequest
				if err := decodeItem(raw, &tr); err != nil {
					done[i] <- bulkTriggerOutcome{err: err}
					return
				}
				res, err := s.deps.Control.Trigger(ctx, tenant, tr.command())
				done[i] <- bulkTriggerOutcome{res: res, err: err}
			}()
		}
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(`{"results":[`)
	for i, ch := range done {
		o := <-ch
		if i > 0 {
			bw.WriteByte(',')
		}
		s.writeBulkTrigger(r, bw, o)
	}
	bw.WriteString("]}\n")
	_ = bw.Flush()
	return nil
}

// writeBulkTrigger writes one item of a bulk trigger's answer: the status
// and body POST /v1/events would have answered, in one object.
func (s *Server) writeBulkTrigger(r *http.Request, bw *bufio.Writer, o bulkTriggerOutcome) {
	if o.err != nil {
		status, d := s.itemError(r, o.err)
		b, _ := json.Marshal(struct {
			Status int          `json:"status"`
			Error  *errorDetail `json:"error"`
		}{status, d})
		bw.Write(b)
		return
	}
	fmt.Fprintf(bw, `{"status":%d,`, http.StatusAccepted)
	writeTriggerFields(bw, o.res)
	bw.WriteString("}")
}
