package eventlog

import (
	"context"
	"time"
)

// Identity names one instance of the EVENTS stream and how far it goes.
// Files derived from the stream (the projections) record Name and Created:
// a stream created anew (a wiped store, another cluster) has another
// Created, so such a file is known to describe a log that is gone.
type Identity struct {
	// ID is the stream's name and creation instant, e.g.
	// "EVENTS@2026-11-23T21:08:52.123456789Z".
	ID string
	// LastSeq is the stream's last sequence when asked (0 when empty).
	LastSeq uint64
}

// Identity asks the server for the EVENTS stream's identity.
func (l *Log) Identity(ctx context.Context) (Identity, error) {
	info, err := l.eventsInfo(ctx)
	if err != nil {
		return Identity{}, err
	}
	return Identity{ID: info.Config.Name + "@" + info.Created.UTC().Format(time.RFC3339Nano), LastSeq: info.State.LastSeq}, nil
}
