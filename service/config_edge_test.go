package service

import (
	"strings"
	"testing"
	"time"
)

func TestHTTPBoundsConfig(t *testing.T) {
	c, err := LoadConfig(envOf(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConns != 4096 || c.HTTPReadTimeout != 60*time.Second || c.HTTPWriteTimeout != 5*time.Minute ||
		c.HTTPIdleTimeout != 120*time.Second || c.HTTPHeaderTimeout != 10*time.Second || c.HTTPCapHeaderTimeout != 2*time.Second ||
		c.InternalAddr != "" {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = LoadConfig(envOf(map[string]string{"HERALD_MAX_CONNS": "10", "HERALD_HTTP_READ_TIMEOUT": "5s",
		"HERALD_HTTP_WRITE_TIMEOUT": "1m", "HERALD_HTTP_IDLE_TIMEOUT": "30s", "HERALD_INTERNAL_ADDR": "127.0.0.1:9090",
		"HERALD_HTTP_HEADER_TIMEOUT": "3s", "HERALD_HTTP_CAP_HEADER_TIMEOUT": "500ms"}), Flags{})
	if err != nil || c.MaxConns != 10 || c.HTTPReadTimeout != 5*time.Second || c.HTTPWriteTimeout != time.Minute ||
		c.HTTPIdleTimeout != 30*time.Second || c.InternalAddr != "127.0.0.1:9090" ||
		c.HTTPHeaderTimeout != 3*time.Second || c.HTTPCapHeaderTimeout != 500*time.Millisecond {
		t.Fatalf("%+v %v", c, err)
	}
	_, err = LoadConfig(envOf(map[string]string{"HERALD_MAX_CONNS": "lots", "HERALD_HTTP_READ_TIMEOUT": "0s",
		"HERALD_HTTP_WRITE_TIMEOUT": "later", "HERALD_INTERNAL_ADDR": "nope", "HERALD_HTTP_CAP_HEADER_TIMEOUT": "0s"}), Flags{})
	for _, name := range []string{"HERALD_MAX_CONNS", "HERALD_HTTP_READ_TIMEOUT", "HERALD_HTTP_WRITE_TIMEOUT", "HERALD_INTERNAL_ADDR",
		"HERALD_HTTP_CAP_HEADER_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s not reported: %v", name, err)
		}
	}
}
