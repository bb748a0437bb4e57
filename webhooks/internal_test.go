package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/nats-io/nats.go/jetstream"
)

func TestBackoffDoublesUpToAnHour(t *testing.T) {
	base := 5 * time.Second
	for n, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second,
		10: 2560 * time.Second, 11: time.Hour, 40: time.Hour} {
		if got := backoff(base, n); got != want {
			t.Errorf("backoff(5s, %d) = %v, want %v", n, got, want)
		}
	}
}

func TestMessageIDIsStableAndDistinct(t *testing.T) {
	a := messageID("wh_1", "evt_1", "")
	if a != messageID("wh_1", "evt_1", "") || a == messageID("wh_2", "evt_1", "") || a == messageID("wh_1", "evt_2", "") ||
		messageID("wh_1", "evt_1", "m1") == messageID("wh_1", "evt_1", "m2") || len(a) != len("msg_")+32 {
		t.Fatalf("ids: %s", a)
	}
}

// TestPrivateDestinationRefusedAtSend: with private egress off, a send to
// a loopback address is refused at dial time with egress.ErrRefused (the
// failure send treats as terminal) and never reaches the server.
func TestPrivateDestinationRefusedAtSend(t *testing.T) {
	reached := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	defer srv.Close()
	d := New(Config{Egress: egress.Policy{AllowPrivate: false}})
	status, err := d.post(context.Background(), srv.URL, "msg_x", time.Now(), "v1,x", []byte("{}"))
	if !errors.Is(err, egress.ErrRefused) || status != 0 || reached {
		t.Fatalf("post: %d %v (reached %v)", status, err, reached)
	}
	d = New(Config{Egress: egress.Policy{AllowPrivate: true}})
	if status, err := d.post(context.Background(), srv.URL, "msg_x", time.Now(), "v1,x", []byte("{}")); err != nil || status != 200 || !reached {
		t.Fatalf("allowed post: %d %v", status, err)
	}
}

// TestNonCanonicalLoopbackRefusedAtSend: an endpoint URL spelling loopback
// as a number or with a trailing dot is refused at dial time with
// egress.ErrRefused (terminal), not failed as an unknown name to retry, and
// never reaches the server.
func TestNonCanonicalLoopbackRefusedAtSend(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	d := New(Config{Egress: egress.Policy{AllowPrivate: false}})
	for _, host := range []string{"2130706433", "127.1", "0x7f000001", "0177.0.0.1", "0", "127.0.0.1.", "localhost.", "[::ffff:7f00:1]"} {
		u := "http://" + host + ":" + port + "/hook"
		if status, err := d.post(context.Background(), u, "msg_x", time.Now(), "v1,x", []byte("{}")); !errors.Is(err, egress.ErrRefused) || status != 0 {
			t.Errorf("post %s: %d %v, want egress.ErrRefused", u, status, err)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

// TestLegacySourcesFloorTheNewOnes: the acknowledged floor of a source of
// the earlier layout (one consumer per aggregate for every tenant) is
// where a tenant's new sources start, so the events it handled are not
// sent again after an upgrade.
func TestLegacySourcesFloorTheNewOnes(t *testing.T) {
	ctx := context.Background()
	l := testnats.Log(t)
	var recs []eventlog.Record
	for i := range 5 {
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject("ten_a", eventlog.AggDelivery, fmt.Sprint("d", i)),
			Type: events.DeliverySent, Tenant: "ten_a", Data: map[string]any{}})
	}
	seqs := testnats.Append(t, l, recs)
	c, err := l.JetStream().CreateConsumer(ctx, eventlog.EventsStream, jetstream.ConsumerConfig{
		Durable: sourceConsumer + "-" + eventlog.AggDelivery, FilterSubject: "ev.*.delivery.*",
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(3)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f := &follower{d: &Dispatcher{cfg: Config{Log: l}}}
	floors := f.legacyFloors(ctx)
	if floors[eventlog.AggDelivery] != seqs[2] || floors[eventlog.AggRun] != 0 {
		t.Fatalf("floors %v, want delivery at %d and no run floor", floors, seqs[2])
	}
}
