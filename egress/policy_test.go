package egress_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/egress"
)

func TestCheck(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.1.2.3", "::1", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"fc00::1", "fd12:3456::1", "169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0",
		"0.0.0.0", "0.1.2.3", "::", "100.64.0.1", "100.127.255.254", "224.0.0.1", "ff02::1",
		"255.255.255.255", "240.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"64:ff9b::a9fe:a9fe", "2002:7f00:1::", "::127.0.0.1", "fec0::1", "192.0.2.1",
	}
	allowed := []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"}
	var deny egress.Policy
	allow := egress.Policy{AllowPrivate: true}
	for _, s := range refused {
		ip := netip.MustParseAddr(s)
		err := deny.Check(ip)
		if !errors.Is(err, egress.ErrRefused) {
			t.Errorf("Check(%s) = %v, want ErrRefused", s, err)
		}
		if err := allow.Check(ip); err != nil {
			t.Errorf("AllowPrivate: Check(%s) = %v, want nil", s, err)
		}
	}
	for _, s := range allowed {
		if err := deny.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", s, err)
		}
	}
	if err := allow.Check(netip.Addr{}); !errors.Is(err, egress.ErrRefused) {
		t.Errorf("Check(invalid) = %v, want ErrRefused", err)
	}
}

func TestCheckHost(t *testing.T) {
	ctx := context.Background()
	var deny egress.Policy
	for _, h := range []string{"127.0.0.1", "[::1]", "::1", "169.254.169.254", "localhost", "10.1.2.3"} {
		if err := deny.CheckHost(ctx, h); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("CheckHost(%q) = %v, want ErrRefused", h, err)
		}
	}
	if err := deny.CheckHost(ctx, "93.184.216.34"); err != nil {
		t.Errorf("CheckHost(public IP) = %v", err)
	}
	if err := (egress.Policy{AllowPrivate: true}).CheckHost(ctx, "localhost"); err != nil {
		t.Errorf("AllowPrivate: CheckHost(localhost) = %v", err)
	}
}

// counter is a server that counts its calls.
func counter(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// viaLocalhost rewrites a server's 127.0.0.1 URL to reach it by the name
// localhost: a host name, not an IP literal.
func viaLocalhost(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }

func TestClientRefusesLoopbackName(t *testing.T) {
	srv, calls := counter(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "db_password=hunter2") })
	url := viaLocalhost(srv.URL)

	_, err := egress.Policy{}.Client(0).Get(url)
	if !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("policy off: Get(%s) = %v, want ErrRefused", url, err)
	}
	var marker interface{ EgressRefused() bool }
	if !errors.As(err, &marker) || !marker.EgressRefused() {
		t.Fatalf("the refusal does not carry EgressRefused: %v", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("the server was called %d times", calls.Load())
	}

	resp, err := egress.Policy{AllowPrivate: true}.Client(0).Get(url)
	if err != nil {
		t.Fatalf("policy on: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || calls.Load() != 1 {
		t.Fatalf("policy on: status %d, calls %d", resp.StatusCode, calls.Load())
	}
}

func TestClientFollowsNoRedirect(t *testing.T) {
	target, targetCalls := counter(t, func(w http.ResponseWriter, r *http.Request) {})
	redirector, _ := counter(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/admin", http.StatusTemporaryRedirect)
	})
	resp, err := egress.Policy{AllowPrivate: true}.Client(0).Post(redirector.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("status %d, want the 307 itself", resp.StatusCode)
	}
	if n := targetCalls.Load(); n != 0 {
		t.Fatalf("the Location target was called %d times", n)
	}
}

// TestRebindingRefusedAtDial: a name that resolves to a public address
// when it is configured and to loopback when it is dialled (DNS rebinding)
// passes the configuration check and is refused at the dial.
func TestRebindingRefusedAtDial(t *testing.T) {
	srv, calls := counter(t, func(w http.ResponseWriter, r *http.Request) {})
	var answer atomic.Value
	answer.Store([4]byte{93, 184, 216, 34})
	p := egress.Policy{Resolver: fakeDNS(t, &answer)}
	if err := p.CheckHost(context.Background(), "rebind.test"); err != nil {
		t.Fatalf("configuration check: %v", err)
	}
	answer.Store([4]byte{127, 0, 0, 1})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	_, err := p.Client(0).Get("http://rebind.test:" + port + "/")
	if !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("Get = %v, want ErrRefused", err)
	}
	if calls.Load() != 0 {
		t.Fatal("the loopback server was reached")
	}
	// The same resolver with the policy on reaches it: the refusal was
	// the policy's, not a broken lookup.
	p.AllowPrivate = true
	resp, err := p.Client(0).Get("http://rebind.test:" + port + "/")
	if err != nil {
		t.Fatalf("policy on: %v", err)
	}
	resp.Body.Close()
}

// fakeDNS is a resolver answering every A query with *answer and every
// other query with no record, over an in-memory stream connection.
func fakeDNS(t *testing.T, answer *atomic.Value) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			for {
				var n [2]byte
				if _, err := io.ReadFull(server, n[:]); err != nil {
					return
				}
				q := make([]byte, int(n[0])<<8|int(n[1]))
				if _, err := io.ReadFull(server, q); err != nil {
					return
				}
				end := 12
				for end < len(q) && q[end] != 0 {
					end += int(q[end]) + 1
				}
				end += 5 // the root label, QTYPE and QCLASS
				if end > len(q) {
					return
				}
				isA := q[end-4] == 0 && q[end-3] == 1
				resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:end]...)
				if isA {
					resp[7] = 1
					ip := answer.Load().([4]byte)
					resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
					resp = append(resp, ip[:]...)
				}
				if _, err := server.Write(append([]byte{byte(len(resp) >> 8), byte(len(resp))}, resp...)); err != nil {
					return
				}
			}
		}()
		return client, nil
	}}
}

func TestRequireTLS(t *testing.T) {
	srv, calls := counter(t, func(w http.ResponseWriter, r *http.Request) {})
	c := &http.Client{Transport: egress.Policy{}.RequireTLS(egress.Policy{AllowPrivate: true}.Transport())}
	if _, err := c.Get(srv.URL); !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("plain http: %v, want ErrRefused", err)
	}
	if calls.Load() != 0 {
		t.Fatal("the server was called")
	}
	dev := egress.Policy{AllowPrivate: true}
	resp, err := (&http.Client{Transport: dev.RequireTLS(dev.Transport())}).Get(srv.URL)
	if err != nil {
		t.Fatalf("development: %v", err)
	}
	resp.Body.Close()
}
