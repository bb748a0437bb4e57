package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/heraldhq/herald/service"
)

// healthcheckCmd is `herald healthcheck [--http ADDR]`: it asks the herald
// serve at ADDR (HERALD_HTTP_ADDR) for GET /healthz and fails unless the
// answer is 200. It is the container image's HEALTHCHECK, whose base has
// no shell or curl. A wildcard host (0.0.0.0, ::) is asked on loopback.
func healthcheckCmd(fs *flag.FlagSet) action {
	var f service.Flags
	fs.StringVar(&f.HTTPAddr, "http", "", "REST API address of the server (HERALD_HTTP_ADDR)")
	return func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
		return healthcheck(ctx, f, stdout)
	}
}

func healthcheck(ctx context.Context, f service.Flags, stdout io.Writer) error {
	cfg, err := toolConfig(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+localAddr(cfg.HTTPAddr)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %s", resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

// localAddr is the address at which a tool on the server's host reaches
// a server listening on addr: a wildcard host (0.0.0.0, ::, none) is
// asked on loopback.
func localAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
