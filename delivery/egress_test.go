package delivery_test

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// bannerService is a TCP service on loopback that is no SMTP server: it
// greets every connection with banner and closes it.
func bannerService(t *testing.T, banner string) int {
	t.Helper()
	return testnet.Serve(t, func(c net.Conn) { c.Write([]byte(banner + "\r\n")) }).Port()
}

// TestInternalBannerNotShownToTenant: a channel pointed at an internal TCP
// service reads its banner; the tenant sees the reply code at most, in the
// /v1/deliver answer and GET /v1/deliveries, while the operator's log
// keeps the detail.
func TestInternalBannerNotShownToTenant(t *testing.T) {
	for _, tc := range []struct {
		name, banner, code string
		status             int
	}{
		// A greeting refusing the session proves nothing was sent: the
		// send fails over (here there is no other channel) and is retried.
		{"a reply code", "554 5.7.1 internal-db-01 db_password=hunter2", "provider_unavailable", http.StatusBadGateway},
		{"no reply code", "SSH-2.0-OpenSSH_9.6 internal-db-01 db_password=hunter2", "provider_unavailable", http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
			f.configureChannel(bannerService(t, tc.banner), false, 201)
			r := f.deliver(sendStep("run_b", "s"))
			expectError(t, r, tc.status, tc.code)
			rows := f.deliveries("run_b")
			if len(rows) != 1 || rows[0].Error == nil {
				t.Fatalf("deliveries = %+v", rows)
			}
			for _, shown := range []string{string(r.Body), rows[0].Error.Message} {
				if strings.Contains(shown, "hunter2") || strings.Contains(shown, "internal-db") || strings.Contains(shown, "OpenSSH") {
					t.Errorf("the tenant sees the banner: %s", shown)
				}
			}
			if tc.name == "a reply code" && !strings.Contains(rows[0].Error.Message, "554") {
				t.Errorf("the reply code is lost: %q", rows[0].Error.Message)
			}
			if tc.name == "a reply code" && !strings.Contains(string(f.logs.Bytes()), "internal-db-01") {
				t.Errorf("the operator's log lost the detail: %s", f.logs.Bytes())
			}
		})
	}
}
