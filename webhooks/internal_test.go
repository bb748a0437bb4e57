package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldhq/herald/egress"
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
