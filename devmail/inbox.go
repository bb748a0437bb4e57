package devmail

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxMessages is the capacity of an Inbox created with 0.
const DefaultMaxMessages = 1000

// Inbox keeps the most recent messages caught, up to its capacity; the
// oldest message makes room for a new one. It is safe for concurrent use.
// Every Message it hands out is a copy the caller owns.
type Inbox struct {
	capacity int

	mu      sync.Mutex
	ring    []Message // oldest at head once full
	head    int
	seq     uint64
	changed chan struct{} // closed and replaced on every change, for Wait
	hooks   []hook
	hookSeq uint64
}

type hook struct {
	id uint64
	fn func(Message)
}

// NewInbox returns an empty Inbox holding up to capacity messages;
// capacity <= 0 means DefaultMaxMessages.
func NewInbox(capacity int) *Inbox {
	if capacity <= 0 {
		capacity = DefaultMaxMessages
	}
	return &Inbox{capacity: capacity, changed: make(chan struct{})}
}

// Add stores m, dropping the oldest message when the inbox is full, and
// returns the stored copy: its ID is assigned here (IDs are never reused)
// and ReceivedAt set to now when zero. The OnMessage hooks then run in the
// caller's goroutine, in the order they were added.
func (in *Inbox) Add(m Message) Message {
	m = m.clone()
	if m.ReceivedAt.IsZero() {
		m.ReceivedAt = time.Now()
	}

	in.mu.Lock()
	in.seq++
	m.ID = strconv.FormatUint(in.seq, 10)
	if len(in.ring) < in.capacity {
		in.ring = append(in.ring, m)
	} else {
		in.ring[in.head] = m
		in.head = (in.head + 1) % in.capacity
	}
	in.notifyLocked()
	hooks := slices.Clone(in.hooks)
	in.mu.Unlock()

	for _, h := range hooks {
		h.fn(m.clone())
	}
	return m.clone()
}

// OnMessage registers fn to run with each message Add stores, until remove
// is called. fn runs in the goroutine that added the message (for a Server,
// the SMTP session's) after the message is stored; it must not block, and
// may call the Inbox.
func (in *Inbox) OnMessage(fn func(Message)) (remove func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hookSeq++
	id := in.hookSeq
	in.hooks = append(in.hooks, hook{id: id, fn: fn})
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.hooks = slices.DeleteFunc(in.hooks, func(h hook) bool { return h.id == id })
	}
}

// Messages returns the messages held, newest first.
func (in *Inbox) Messages() []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := len(in.ring)
	out := make([]Message, n)
	for i := range n {
		out[n-1-i] = in.ring[(in.head+i)%n].clone()
	}
	return out
}

// Get returns the message with id, and whether the inbox still holds it.
func (in *Inbox) Get(id string) (Message, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, m := range in.ring {
		if m.ID == id {
			return m.clone(), true
		}
	}
	return Message{}, false
}

// Len returns how many messages the inbox holds.
func (in *Inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.ring)
}

// Cap returns how many messages the inbox can hold.
func (in *Inbox) Cap() int { return in.capacity }

// Clear drops every message. IDs keep counting.
func (in *Inbox) Clear() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ring, in.head = nil, 0
	in.notifyLocked()
}

// Wait blocks until the inbox holds at least n messages, or ctx ends (its
// error is returned). n above the capacity fails at once with
// ErrBeyondCapacity.
func (in *Inbox) Wait(ctx context.Context, n int) error {
	if n > in.capacity {
		return fmt.Errorf("%w: waiting for %d, capacity %d", ErrBeyondCapacity, n, in.capacity)
	}
	for {
		in.mu.Lock()
		held, changed := len(in.ring), in.changed
		in.mu.Unlock()
		if held >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (in *Inbox) notifyLocked() {
	close(in.changed)
	in.changed = make(chan struct{})
}
