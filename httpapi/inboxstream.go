package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/inboxfeed"
	"github.com/heraldhq/herald/projections"
)

// GET /v1/inbox/stream is written by hand rather than with an SSE library:
// the format is four line kinds (id, event, data, comment), and what the
// stream needs beyond them is Herald's own: resuming from a stream
// sequence through the read model, the shared in-process feed, per-write
// deadlines, the server's shutdown signal. The libraries we looked at
// (r3labs/sse, tmaxmax/go-sse) bring their own broker and replay buffer,
// which would duplicate the feed and the event log, and keep a goroutine
// per stream besides the handler's.

// Stream settings.
const (
	// DefaultInboxHeartbeat is how often an idle stream writes a comment
	// line (CONTRACT §13: at least every 15 s).
	DefaultInboxHeartbeat = 15 * time.Second
	// streamWriteTimeout bounds one write to a stream's client: a client
	// that stops reading is cut off after it.
	streamWriteTimeout = 10 * time.Second
	// streamRetryMillis is the reconnection delay the stream asks of an
	// EventSource.
	streamRetryMillis = 2000
	// maxLastEventIDChars bounds Last-Event-ID: a sequence is at most 20
	// digits; anything else is ignored.
	maxLastEventIDChars = 20
)

// errTooManyStreams: a stream over the process's or the subscriber's
// bound (429 too_many_streams).
var errTooManyStreams = apierr.New(apierr.CodeTooManyStreams, "too many inbox streams are open; close one or retry after the Retry-After header's seconds")

// sseWriter writes Server-Sent Events to a response (which buffers
// them), each burst of writes within streamWriteTimeout.
type sseWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	err   error
	armed bool // the write deadline of the current burst is set
}

// openSSE answers 200 with the headers of an event stream and returns
// its writer. The stream outlives the server's read and write timeouts:
// each burst of writes has its own deadline instead, and the read
// deadline (which would cancel the request) is lifted.
func openSSE(w http.ResponseWriter) *sseWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: rc}
}

func (s *sseWriter) event(id uint64, name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.raw("id: " + strconv.FormatUint(id, 10) + "\nevent: " + name + "\ndata: " + string(data) + "\n\n")
}

func (s *sseWriter) raw(text string) {
	if s.err != nil {
		return
	}
	if !s.armed {
		_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		s.armed = true
	}
	_, s.err = io.WriteString(s.w, text)
}

// flush sends what is buffered and ends the burst.
func (s *sseWriter) flush() error {
	if s.err == nil && s.armed {
		s.err = s.rc.Flush()
	}
	s.armed = false
	return s.err
}

// inboxStream is GET /v1/inbox/stream: the subscriber's inbox as
// Server-Sent Events. Each event's id is a stream sequence: `message` for
// each message stored after the last id the client saw (Last-Event-ID)
// or, for a new client, after it connected; `counts` after every change,
// and once at the start. A comment line every heartbeat keeps proxies from
// closing an idle stream. The stream ends when the client goes, when its
// token expires, its subscriber is deleted or its tokens revoked (noticed
// at a heartbeat),
// when it falls too far behind (the client reconnects and resumes), and
// when the server shuts down.
func (s *Server) inboxStream(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Feed == nil {
		return errNotReady
	}
	id := inboxOf(r.Context())
	var last uint64
	if v := r.Header.Get("Last-Event-ID"); v != "" && len(v) <= maxLastEventIDChars {
		last, _ = strconv.ParseUint(v, 10, 64)
	}
	l, pos, err := s.deps.Feed.Listen(id.Tenant, id.SubscriberID)
	if errors.Is(err, inboxfeed.ErrTooManyListeners) || errors.Is(err, inboxfeed.ErrTooManyForTenant) ||
		errors.Is(err, inboxfeed.ErrTooManyForSubscriber) {
		w.Header().Set("Retry-After", "5")
		return errTooManyStreams
	}
	if err != nil {
		return errNotReady
	}
	defer l.Close()
	ctx := r.Context()
	// Everything up to pos comes from the read model, so it must hold it.
	if err := s.deps.Store.WaitFor(ctx, pos); err != nil {
		return err
	}
	if last > pos {
		// Seen through another process further along, or an id of a log
		// that is gone (a wiped store): the latter would hide every live
		// message, so it is forgotten.
		if end, err := s.deps.Log.LastSeq(ctx); err == nil && last > end {
			last = 0
		}
	}
	var missed []projections.InAppMessage
	if last > 0 && last < pos {
		if missed, err = s.deps.Store.InboxMessagesBetween(id.Tenant, id.SubscriberID, last, pos); err != nil {
			return err
		}
	}
	counts, err := s.deps.Store.InboxCounts(id.Tenant, id.SubscriberID)
	if err != nil {
		return err
	}

	out := openSSE(w)
	sent := max(last, pos)
	out.raw("retry: " + strconv.Itoa(streamRetryMillis) + "\n\n")
	for _, m := range missed {
		out.event(m.Seq, "message", viewMessage(m))
	}
	out.event(sent, "counts", countsView{Unread: counts.Unread, Unseen: counts.Unseen})
	if out.flush() != nil {
		return nil
	}

	beat := s.cfg.InboxHeartbeat
	if beat <= 0 {
		beat = DefaultInboxHeartbeat
	}
	ticker := time.NewTicker(beat)
	defer ticker.Stop()
	batch := make([]inboxfeed.Change, 0, 16)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.ops.done():
			return nil
		case <-ticker.C:
			if !time.Now().Before(id.ExpiresAt) {
				return nil
			}
			if sub, err := s.deps.Store.Subscriber(id.Tenant, id.SubscriberID); err != nil || sub.TokenEpoch != id.TokenEpoch {
				return nil // deleted, or its tokens revoked
			}
			out.raw(": keep-alive\n\n")
		case c, ok := <-l.C:
			if !ok {
				if l.Overflowed() {
					s.logger.Debug("inbox stream dropped: its client fell behind; it resumes when it reconnects",
						"tenant", id.Tenant)
				}
				return nil
			}
			batch = append(batch[:0], c)
		drain:
			for len(batch) < cap(batch) {
				select {
				case c, ok := <-l.C:
					if !ok {
						break drain
					}
					batch = append(batch, c)
				default:
					break drain
				}
			}
			top := batch[len(batch)-1].Seq
			if top <= sent {
				continue
			}
			// New messages at once, from their events; the counts once
			// the read model holds the changes.
			for _, c := range batch {
				if c.Seq <= sent || c.Stored == nil {
					continue
				}
				out.event(c.Seq, "message", viewMessage(projections.InAppMessage{
					InAppMessageStoredData: *c.Stored, CreatedAt: c.At, Seq: c.Seq}))
			}
			if out.flush() != nil {
				return nil
			}
			sent = top
			if err := s.deps.Store.WaitFor(ctx, top); err != nil {
				return nil
			}
			counts, err := s.deps.Store.InboxCounts(id.Tenant, id.SubscriberID)
			if err != nil {
				return nil
			}
			out.event(sent, "counts", countsView{Unread: counts.Unread, Unseen: counts.Unseen})
		}
		if out.flush() != nil {
			return nil
		}
	}
}
