package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testnet"
)

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"tenant"}, {"tenant", "delete", "x"}, {"serve", "--bogus"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"herald", "go1.", "nats-server 2.", "nats.go"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q: %s", want, out.String())
		}
	}
}

func TestServeRefusesBadConfiguration(t *testing.T) {
	t.Setenv("HERALD_MASTER_KEY", "short")
	err := run(context.Background(), []string{"serve", "--data", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "HERALD_MASTER_KEY") {
		t.Fatalf("got %v", err)
	}
}

func TestServeRefusesAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = run(context.Background(), []string{"serve", "--data", t.TempDir(), "--http", l.Addr().String()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "HERALD_HTTP_ADDR") {
		t.Fatalf("got %v", err)
	}
}

// serveReady runs `herald serve` on a fresh data dir and a free port until
// ctx ends, and returns once it answers ready: done delivers run's answer,
// logs collects its log.
func serveReady(t *testing.T, ctx context.Context) (done <-chan error, logs *testlog.Buffer) {
	t.Helper()
	addr := testnet.FreeAddr(t)
	answer := make(chan error, 1)
	logs = &testlog.Buffer{}
	go func() {
		answer <- run(ctx, []string{"serve", "--data", t.TempDir(), "--http", addr}, &bytes.Buffer{}, logs)
	}()
	waitReady(t, addr)
	return answer, logs
}

func TestServeStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done, logs := serveReady(t, ctx)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve after cancel: %v", err)
	}
	if !strings.Contains(logs.String(), "draining") {
		t.Fatalf("no drain logged: %s", logs.String())
	}
}
