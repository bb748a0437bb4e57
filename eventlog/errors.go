package eventlog

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/events"

	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrConflict is returned by Append when the subject's last sequence is
	// not the one the caller expected: another writer got there first.
	ErrConflict = errors.New("eventlog: concurrent write to the same aggregate")
	// ErrBadToken is returned by DecodeToken for a token Token did not make.
	ErrBadToken = errors.New("eventlog: malformed subject token")
	// ErrBadEvent is returned when a stored message is not an event
	// envelope; it is events.ErrBadEvent, which Event.Decode also wraps.
	ErrBadEvent = events.ErrBadEvent
	// ErrNoStreams is returned by Attach when the streams do not exist
	// (nothing was ever written to this NATS server or cluster).
	ErrNoStreams = errors.New("eventlog: no event log here")
	// ErrBadFilter is returned by Replay for a filter it cannot apply.
	ErrBadFilter = errors.New("eventlog: invalid filter")
	// ErrBadSubject is returned, before anything is sent, for a subject the
	// server would refuse: empty tokens, spaces or control characters, a
	// wildcard in a subject written to, or more than MaxSubjectBytes. The
	// server answers such a subject by closing the connection, so no
	// caller may ever send one; ids are validated at the edge and this is
	// the last line. It is of kind apierr.ErrInvalid, code invalid_id: an
	// id that would make such a subject is the client's fault, never a
	// 500, and a client reads only that an id is malformed, never the
	// subject.
	ErrBadSubject error = apierr.Masked(apierr.CodeInvalidID, "eventlog: subject the server would refuse",
		"an id in the request is too long or malformed")
	// ErrSubjectTooLong is the ErrBadSubject of a subject over
	// MaxSubjectBytes (errors.Is matches both).
	ErrSubjectTooLong = fmt.Errorf("%w: longer than %d bytes", ErrBadSubject, MaxSubjectBytes)
)

// isWrongLastSeq reports whether err is an optimistic-concurrency conflict,
// as the server reports it on single-replica (10071) and replicated (10164)
// streams.
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}
