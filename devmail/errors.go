package devmail

import "errors"

var (
	// ErrServerClosed is returned by Listen and Run on a Server that has
	// already run: a Server runs once.
	ErrServerClosed = errors.New("devmail: server already ran")

	// ErrBeyondCapacity is returned by Inbox.Wait for more messages than the
	// inbox can hold, a wait that could never end.
	ErrBeyondCapacity = errors.New("devmail: more messages than the inbox holds")

	// errNotFound answers 404 on the HTTP API.
	errNotFound = errors.New("message not found")
)
