package devmail_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/devmail"
)

func ids(ms []devmail.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestInboxRing(t *testing.T) {
	in := devmail.NewInbox(3)
	for i := range 5 {
		in.Add(devmail.Message{Subject: "m" + strconv.Itoa(i+1)})
	}
	if in.Len() != 3 || in.Cap() != 3 {
		t.Fatalf("Len, Cap = %d, %d, want 3, 3", in.Len(), in.Cap())
	}
	if got := ids(in.Messages()); !slices.Equal(got, []string{"5", "4", "3"}) {
		t.Errorf("Messages IDs = %v, want newest first [5 4 3]", got)
	}
	if _, ok := in.Get("2"); ok {
		t.Error("Get found a message the ring dropped")
	}
	if m, ok := in.Get("4"); !ok || m.Subject != "m4" {
		t.Errorf("Get(4) = %+v, %v", m, ok)
	}

	in.Clear()
	if in.Len() != 0 || len(in.Messages()) != 0 {
		t.Errorf("after Clear: Len %d", in.Len())
	}
	if m := in.Add(devmail.Message{}); m.ID != "6" || m.ReceivedAt.IsZero() {
		t.Errorf("Add after Clear = ID %q ReceivedAt %v, want ID 6 and a time", m.ID, m.ReceivedAt)
	}
	if c := devmail.NewInbox(0).Cap(); c != devmail.DefaultMaxMessages {
		t.Errorf("NewInbox(0).Cap() = %d", c)
	}
}

func TestInboxCopies(t *testing.T) {
	in := devmail.NewInbox(0)
	to := []string{"a@example.com"}
	in.Add(devmail.Message{To: to, Headers: map[string][]string{"Subject": {"x"}}})
	to[0] = "changed by the caller"
	got := in.Messages()[0]
	got.To[0] = "changed by a reader"
	got.Headers["Subject"][0] = "changed"
	again := in.Messages()[0]
	if again.To[0] != "a@example.com" || again.Headers["Subject"][0] != "x" {
		t.Errorf("stored message changed through a copy: %+v", again)
	}
}

func TestInboxWait(t *testing.T) {
	in := devmail.NewInbox(10)
	ctx := context.Background()
	go func() {
		for range 3 {
			time.Sleep(5 * time.Millisecond)
			in.Add(devmail.Message{})
		}
	}()
	if err := in.Wait(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if in.Len() < 3 {
		t.Errorf("Wait returned with %d messages", in.Len())
	}

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := in.Wait(short, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past the deadline: %v", err)
	}
	if err := in.Wait(ctx, 11); !errors.Is(err, devmail.ErrBeyondCapacity) {
		t.Errorf("Wait(11) on capacity 10: %v, want ErrBeyondCapacity", err)
	}
}

func TestInboxOnMessage(t *testing.T) {
	in := devmail.NewInbox(0)
	var got []string
	remove := in.OnMessage(func(m devmail.Message) {
		got = append(got, m.ID)
		_ = in.Len() // a hook may call the inbox
	})
	in.Add(devmail.Message{})
	in.Add(devmail.Message{})
	remove()
	in.Add(devmail.Message{})
	if !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("hook saw %v, want [1 2] and nothing after remove", got)
	}
}

func TestInboxConcurrent(t *testing.T) {
	in := devmail.NewInbox(50)
	var seen sync.Map
	in.OnMessage(func(m devmail.Message) { seen.Store(m.ID, true) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				in.Add(devmail.Message{To: []string{"x@example.com"}})
				in.Messages()
				in.Get("1")
			}
		})
	}
	wg.Go(func() { in.Wait(context.Background(), 50) })
	wg.Wait()
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	if n != 800 || in.Len() != 50 {
		t.Errorf("hooks saw %d messages, inbox holds %d; want 800 and 50", n, in.Len())
	}
}
