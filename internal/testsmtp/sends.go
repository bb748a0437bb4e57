package testsmtp

import (
	"bytes"
	"maps"
	"net/mail"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/devmail"
)

// Sends are the messages a sink caught, read as sends: for each key (a
// run's id, a recipient), the Message-IDs of its messages and how many
// copies of each arrived. A send whose process was killed after the server
// accepted it and before it recorded that is taken over and sent again,
// with the same Message-ID (delivery's promise: once, or a second copy a
// receiver can drop). Two copies of one Message-ID are one send; two
// Message-IDs are two sends.
type Sends struct {
	ids map[string]map[string]int // key → Message-ID → copies
}

// CountSends reads msgs as sends, each under key(m). It fails t for a
// message without a Message-ID: no receiver could drop its copy.
func CountSends(t testing.TB, msgs []devmail.Message, key func(devmail.Message) string) Sends {
	t.Helper()
	s := Sends{ids: map[string]map[string]int{}}
	for _, m := range msgs {
		if m.MessageID == "" {
			t.Errorf("a message to %v (subject %q) has no Message-ID", m.To, m.Subject)
		}
		k := key(m)
		if s.ids[k] == nil {
			s.ids[k] = map[string]int{}
		}
		s.ids[k][m.MessageID]++
	}
	return s
}

// BySubject keys a message by its subject (the crash tests put the run's
// id there).
func BySubject(m devmail.Message) string { return m.Subject }

// ByRecipient keys a message by its envelope recipients.
func ByRecipient(m devmail.Message) string { return strings.Join(m.To, ",") }

// Of is how many sends key had: its distinct Message-IDs.
func (s Sends) Of(key string) int { return len(s.ids[key]) }

// CopiesOf is how many messages of key repeated a Message-ID already
// caught: the copies a receiver drops.
func (s Sends) CopiesOf(key string) int {
	n := 0
	for _, c := range s.ids[key] {
		n += c - 1
	}
	return n
}

// Copies is CopiesOf summed over every key.
func (s Sends) Copies() int {
	n := 0
	for k := range s.ids {
		n += s.CopiesOf(k)
	}
	return n
}

// Keys are the keys that had a message, sorted.
func (s Sends) Keys() []string { return slices.Sorted(maps.Keys(s.ids)) }

// Once fails t for each of keys that had no send or more than one (a
// second Message-ID), and for each key that had a message and is not
// among keys. A copy of a send's Message-ID is allowed. It returns the
// copies, for the test to log.
func (s Sends) Once(t testing.TB, keys []string) (copies int) {
	t.Helper()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
		if n := s.Of(k); n != 1 {
			t.Errorf("%s: %d sends (distinct Message-IDs %v), want 1", k, n, slices.Sorted(maps.Keys(s.ids[k])))
		}
	}
	for _, k := range s.Keys() {
		if !want[k] {
			t.Errorf("%s: %d sends, want none", k, s.Of(k))
		}
	}
	return s.Copies()
}

// MessageID is the Message-ID header of m without its angle brackets; ""
// when it has none or does not parse.
func (m Message) MessageID() string {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		return ""
	}
	return strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>")
}
