package service_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// TestClosedNATSConnectionFailsLiveness: a process whose NATS connection
// is gone must say so, or it serves nothing while looking alive. A
// connection the server closed (here, as in the audit, for a
// control line over its limit) left /healthz at 200 and the process
// running dead. Now the service reports ErrNATSClosed on Done (herald
// serve exits non-zero with it) and /healthz answers 503.
func TestClosedNATSConnectionFailsLiveness(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	if r := h.Do("GET", "/healthz", "", nil); r.Status != http.StatusOK {
		t.Fatalf("healthz before: %d", r.Status)
	}
	// A raw publish past every guard: the server closes the connection.
	_ = h.Log().Conn().Publish(strings.Repeat("x", 5000), nil)
	select {
	case err := <-h.Done():
		if !errors.Is(err, service.ErrNATSClosed) {
			t.Fatalf("Done: %v, want ErrNATSClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the service did not report the closed connection")
	}
	r := h.Do("GET", "/healthz", "", nil)
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != "not_live" {
		t.Fatalf("healthz after: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/readyz", "", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz after: %d", r.Status)
	}
}

// TestShutdownIsNotADeadConnection: the connections Shutdown closes are
// not reported as a failure.
func TestShutdownIsNotADeadConnection(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	h.Stop()
	select {
	case err := <-h.Done():
		t.Fatalf("Done after a clean shutdown: %v", err)
	default:
	}
}

// TestRequestIdleMidBodyIsRefused: a client that stops mid-body must not
// hold a connection past the read timeout. A request idle mid-body (70 s
// in an audit; past the configured read timeout here) was still accepted.
func TestRequestIdleMidBodyIsRefused(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_HTTP_READ_TIMEOUT": "1s"}})
	_, key := h.Tenant("Acme")
	body := `{"locale":"en"}`
	conn, err := net.Dial("tcp", h.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /v1/subscribers/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body[:5])
	time.Sleep(2500 * time.Millisecond)
	_, _ = io.WriteString(conn, body[5:])
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil && resp.StatusCode < 300 {
		t.Fatalf("a request idle mid-body was accepted: %d", resp.StatusCode)
	}
	if r := h.Do("GET", "/v1/subscribers/slow", key, nil); r.Status != http.StatusNotFound {
		t.Fatalf("the slow request's subscriber exists: %d %s", r.Status, r.Body)
	}
}

// TestConnectionCap: with HERALD_MAX_CONNS=1 a second connection waits
// while the first is busy (an open inbox stream), and is served once the
// first closes.
func TestConnectionCap(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_MAX_CONNS": "1"}})
	_, key := h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/subscribers/ada", key, map[string]any{}); r.Status != 201 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	var tok struct{ Token string }
	h.Do("POST", "/v1/subscribers/ada/inbox-tokens", key, nil).JSON(t, &tok)
	h.Client.CloseIdleConnections()
	hold, err := net.Dial("tcp", h.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// The held connection has the one slot once its stream answers.
	fmt.Fprintf(hold, "GET /v1/inbox/stream?token=%s HTTP/1.1\r\nHost: x\r\n\r\n", tok.Token)
	if resp, err := http.ReadResponse(bufio.NewReader(hold), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("held stream: %v", err)
	}
	short := &http.Client{Timeout: 1500 * time.Millisecond}
	if resp, err := short.Get(h.URL() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("a second connection was served past the cap: %d", resp.StatusCode)
	}
	hold.Close()
	testwait.Until(t, "a connection after the held one closed", func() error {
		resp, err := short.Get(h.URL() + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
}

// TestConnectionCapClosesIdleFirst: idle keep-alive connections (one
// GET /healthz each) filling HERALD_MAX_CONNS do not lock a new client
// out until HERALD_HTTP_IDLE_TIMEOUT (120 s): the longest idle one is
// closed to make room, and the others stay open and usable.
func TestConnectionCapClosesIdleFirst(t *testing.T) {
	const max = 4
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_MAX_CONNS": fmt.Sprint(max)}})
	h.Client.CloseIdleConnections()
	get := func(c net.Conn, r *bufio.Reader) error {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	conns := make([]net.Conn, max)
	readers := make([]*bufio.Reader, max)
	for i := range conns {
		c, err := net.Dial("tcp", h.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i], readers[i] = c, bufio.NewReader(c)
		if err := get(c, readers[i]); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	// Every slot is held by an idle keep-alive connection. A new client
	// is answered (the deadline only guards against a hang: without room
	// made it would wait the idle timeout, 120 s).
	fresh := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Get(h.URL() + "/healthz")
	if err != nil {
		t.Fatalf("a new client at the cap: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a new client at the cap: %d", resp.StatusCode)
	}
	// The longest idle connection was the one closed.
	_ = conns[0].SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := readers[0].ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the longest idle connection: %v, want closed", err)
	}
	if err := get(conns[max-1], readers[max-1]); err != nil {
		t.Fatalf("the newest idle connection: %v", err)
	}
}

// TestGeneratedAdminTokenIsNotPrinted: a secret never goes to a log. The
// generated admin token was printed on stderr, where log
// shippers keep it. Now only its file's path is logged; the file is 0600.
func TestGeneratedAdminTokenIsNotPrinted(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	var captured bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&captured, r); close(done) }()
	var logs testlog.Buffer
	dir := t.TempDir()
	cfg, err := service.LoadConfig(func(string) string { return "" }, service.Flags{HTTPAddr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)))
	os.Stderr = stderr
	w.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(context.Background())
	tok := svc.AdminToken()
	path := filepath.Join(dir, service.AdminTokenFile)
	if strings.Contains(captured.String(), tok) || strings.Contains(logs.String(), tok) {
		t.Fatalf("the admin token was printed:\nstderr: %s\nlog: %s", captured.String(), logs.String())
	}
	if !strings.Contains(logs.String(), path) {
		t.Fatalf("the log does not say where the token is: %s", logs.String())
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if st.Mode().Perm() != 0o600 || strings.TrimSpace(string(data)) != tok {
		t.Fatalf("token file mode %v, holds the token: %v", st.Mode().Perm(), strings.TrimSpace(string(data)) == tok)
	}
}

// TestInternalRoutesOnTheirOwnListener: with HERALD_INTERNAL_ADDR, POST
// /v1/deliver is served there only (404 on the public API), still behind
// its token and a minted tenant id.
func TestInternalRoutesOnTheirOwnListener(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_INTERNAL_ADDR": "127.0.0.1:0"}})
	tenant, _ := h.Tenant("Acme")
	post := func(base, tenantHeader string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/v1/deliver", strings.NewReader(`{}`))
		req.Header.Set("x-herald-internal-token", h.InternalToken())
		req.Header.Set("x-herald-tenant-id", tenantHeader)
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if h.InternalAddr() == "" {
		t.Fatal("no internal listener")
	}
	internal := "http://" + h.InternalAddr()
	if status, body := post(h.URL(), tenant); status != http.StatusNotFound {
		t.Fatalf("deliver on the public API: %d %s", status, body)
	}
	if status, body := post(internal, tenant); status != http.StatusUnprocessableEntity || !strings.Contains(body, "validation_failed") {
		t.Fatalf("deliver on the internal listener: %d %s", status, body)
	}
	if status, body := post(internal, "ten_.*.>"); status != http.StatusUnprocessableEntity || !strings.Contains(body, "no_channel") {
		t.Fatalf("deliver with a tenant id that is no tenant id: %d %s", status, body)
	}
	resp, err := h.Client.Get(internal + "/v1/subscribers")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a public route on the internal listener: %d", resp.StatusCode)
	}
}
