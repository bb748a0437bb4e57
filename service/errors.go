package service

import "errors"

var (
	// ErrDataDirInUse is returned when another herald process (a running
	// `herald serve`, or a rebuild) holds the data dir.
	ErrDataDirInUse = errors.New("the data dir is in use by another herald process")
	// ErrNoEventLog is returned by OpenOffline when there is no event log
	// to open: no embedded store under the data dir, or no streams on the
	// cluster.
	ErrNoEventLog = errors.New("no herald event log here")
	// ErrNATSClosed is reported on Done when a NATS connection closed for
	// good (not a disconnect, which is reconnected): the process cannot
	// serve any more and must be restarted.
	ErrNATSClosed = errors.New("NATS connection closed")
)
