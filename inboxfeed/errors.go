package inboxfeed

import "errors"

var (
	// ErrTooManyListeners is returned by Listen when the process holds
	// Options.MaxListeners listeners already.
	ErrTooManyListeners = errors.New("inboxfeed: too many inbox streams on this server")
	// ErrTooManyForTenant is returned by Listen when the subscribers of
	// the tenant hold Options.MaxPerTenant listeners already.
	ErrTooManyForTenant = errors.New("inboxfeed: too many inbox streams for this tenant on this server")
	// ErrTooManyForSubscriber is returned by Listen when the subscriber
	// holds Options.MaxPerSubscriber listeners already.
	ErrTooManyForSubscriber = errors.New("inboxfeed: too many inbox streams for this subscriber")
	// ErrStopped is returned by Listen once the feed is stopped.
	ErrStopped = errors.New("inboxfeed: stopped")
)
