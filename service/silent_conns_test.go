package service_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestConnectionCapClosesSilentSockets: HERALD_MAX_CONNS sockets that
// never send a request do not lock other clients out: at the cap, the
// oldest that has not sent a whole request within
// HERALD_HTTP_CAP_HEADER_TIMEOUT is closed to make room, and GET /healthz
// and an API call are answered. The server's own header timeout is an
// hour here, so only that eviction makes room; the silent sockets it did
// not need stay open.
func TestConnectionCapClosesSilentSockets(t *testing.T) {
	const max = 6
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_MAX_CONNS": fmt.Sprint(max),
		"HERALD_HTTP_HEADER_TIMEOUT": "1h", "HERALD_HTTP_CAP_HEADER_TIMEOUT": "100ms"}})
	_, key := h.Tenant("Acme")
	h.Client.CloseIdleConnections()
	silent := make([]net.Conn, max)
	for i := range silent {
		c, err := net.Dial("tcp", h.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		silent[i] = c
	}
	// Each call on a new connection; the client's deadline only guards
	// against a hang (without eviction it waits the hour).
	fresh := &http.Client{Timeout: testwait.HangGuard, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, call := range []struct{ path, key string }{{"/healthz", ""}, {"/readyz", ""}, {"/v1/subscribers", key}} {
		req, err := http.NewRequest("GET", h.URL()+call.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if call.key != "" {
			req.Header.Set("Authorization", "Bearer "+call.key)
		}
		resp, err := fresh.Do(req)
		if err != nil {
			t.Fatalf("%s with %d silent sockets at the cap: %v", call.path, max, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s with %d silent sockets at the cap: %d", call.path, max, resp.StatusCode)
		}
	}
	// The oldest silent socket was the one closed for room.
	_ = silent[0].SetReadDeadline(time.Now().Add(testwait.HangGuard))
	if _, err := bufio.NewReader(silent[0]).ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the oldest silent socket: %v, want closed", err)
	}
	// Three calls needed at most three slots: the newest silent sockets
	// are still open (a read of an open one times out).
	for i := 3; i < max; i++ {
		_ = silent[i].SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		var ne net.Error
		if _, err := silent[i].Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("silent socket %d of %d: %v, want still open: only the room needed is made", i, max, err)
		}
	}
}
