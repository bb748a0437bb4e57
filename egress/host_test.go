package egress_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testwait"
)

// nonCanonical are spellings of internal addresses that a resolver or URL
// parser reads as the address, and what each means.
var nonCanonical = []struct{ host, addr string }{
	{"2130706433", "127.0.0.1"},
	{"127.1", "127.0.0.1"},
	{"127.0.1", "127.0.0.1"},
	{"0x7f000001", "127.0.0.1"},
	{"0X7F.1", "127.0.0.1"},
	{"0177.0.0.1", "127.0.0.1"},
	{"0", "0.0.0.0"},
	{"0x", "0.0.0.0"},
	{"127.0.0.1.", "127.0.0.1"},
	{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
	{"2852039166", "169.254.169.254"},
	{"012.0.0.1", "10.0.0.1"},
	{"[::1]", "::1"},
	{"::ffff:7f00:1", "::ffff:127.0.0.1"},
}

func TestParseHost(t *testing.T) {
	for _, c := range nonCanonical {
		ip, name, err := egress.ParseHost(c.host)
		if err != nil || name != "" || ip != netip.MustParseAddr(c.addr) {
			t.Errorf("ParseHost(%q) = %v, %q, %v; want %s", c.host, ip, name, err, c.addr)
		}
	}
	for host, want := range map[string]string{
		"Example.COM.": "example.com", "localhost.": "localhost", "1.2.3.4a": "1.2.3.4a",
		"0x7g.example": "0x7g.example", "123.example": "123.example",
	} {
		ip, name, err := egress.ParseHost(host)
		if err != nil || ip.IsValid() || name != want {
			t.Errorf("ParseHost(%q) = %v, %q, %v; want the name %q", host, ip, name, err, want)
		}
	}
	for _, host := range []string{"", ".", "a..", "1.2.3.256", "1.2.3.4.5", "08.0.0.1", "256.1", "0x100000000", "4294967296", "::1::", "example.com:80"} {
		if _, _, err := egress.ParseHost(host); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("ParseHost(%q): err %v, want ErrRefused", host, err)
		}
	}
}

func TestCheckHostNonCanonical(t *testing.T) {
	ctx := context.Background()
	var deny egress.Policy
	hosts := []string{"localhost.", "LOCALHOST", "api.localhost", "1.2.3.256"}
	for _, c := range nonCanonical {
		hosts = append(hosts, c.host)
	}
	for _, h := range hosts {
		if err := deny.CheckHost(ctx, h); !errors.Is(err, egress.ErrRefused) {
			t.Errorf("CheckHost(%q) = %v, want ErrRefused", h, err)
		}
	}
	for _, h := range []string{"134744072", "8.8.8.8.", "0x08080808"} {
		if err := deny.CheckHost(ctx, h); err != nil {
			t.Errorf("CheckHost(%q) (public) = %v", h, err)
		}
	}
}

// TestDialerRefusesNonCanonicalForGood: every spelling of loopback is
// refused by the dialer itself, an error matching ErrRefused (a terminal
// refusal, not a lookup failure to retry), and the listener sees no
// connection; with private egress on, the spelling reaches the address it
// means.
func TestDialerRefusesNonCanonicalForGood(t *testing.T) {
	l := testnet.Count(t)
	port := strconv.Itoa(l.Port())
	ctx := context.Background()
	loopback := []string{"2130706433", "127.1", "0x7f000001", "0177.0.0.1", "127.0.0.1.", "localhost.", "localhost", "0x7f.0.0.1"}
	for _, h := range loopback {
		c, err := egress.Policy{}.Dialer(0).DialContext(ctx, "tcp", net.JoinHostPort(h, port))
		if c != nil {
			c.Close()
		}
		if !errors.Is(err, egress.ErrRefused) {
			t.Errorf("dial %s: %v, want ErrRefused", h, err)
		}
	}
	if _, err := (egress.Policy{AllowPrivate: true}).Dialer(0).DialContext(ctx, "tcp", net.JoinHostPort("1.2.3.256", port)); !errors.Is(err, egress.ErrRefused) {
		t.Errorf("dial a malformed numeric host: %v, want ErrRefused", err)
	}
	if n := l.Accepted(); n != 0 {
		t.Fatalf("the listener accepted %d connections with private egress off", n)
	}
	dialed := 0
	for _, h := range []string{"2130706433", "127.1", "0x7f000001", "0177.0.0.1", "127.0.0.1."} {
		c, err := egress.Policy{AllowPrivate: true}.Dialer(0).DialContext(ctx, "tcp", net.JoinHostPort(h, port))
		if err != nil {
			t.Errorf("private egress on: dial %s: %v", h, err)
			continue
		}
		c.Close()
		dialed++
	}
	testwait.For(t, "every dial with private egress on accepted", func() bool { return l.Accepted() == dialed })
}
