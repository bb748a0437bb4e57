package smtp_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// testServer is a go-smtp server on loopback with the channel config and
// sender options that reach it.
type testServer struct {
	*testsmtp.Server
	cfg  smtp.Config  // a channel config pointing at the server
	opts smtp.Options // options trusting the server's certificate
}

func startServer(t testing.TB, script testsmtp.Options) *testServer {
	t.Helper()
	srv := testsmtp.Start(t, script)
	return &testServer{
		Server: srv,
		cfg: smtp.Config{
			Host:      "127.0.0.1",
			Port:      srv.Port,
			Secure:    script.Security == testsmtp.ImplicitTLS,
			FromEmail: "noreply@herald.test",
			FromName:  "Herald",
		},
		opts: smtp.Options{
			TLSConfig:      &tls.Config{RootCAs: srv.Roots},
			CommandTimeout: 5 * time.Second,
			DialTimeout:    5 * time.Second,
		},
	}
}

// wantCounts fails the test unless the server accepted accepted messages
// over connections connections; why says why that many connections.
func (ts *testServer) wantCounts(t *testing.T, accepted, connections int, why string) {
	t.Helper()
	if n := ts.Accepted(); n != accepted {
		t.Errorf("server accepted %d messages, want %d", n, accepted)
	}
	if n := ts.Connections(); n != connections {
		t.Errorf("server saw %d connections, want %d (%s)", n, connections, why)
	}
}
