// Package testnet gives tests loopback addresses that nothing listens on:
// for a server a test starts (a child process, a NATS route), or for a
// destination that must refuse the connection; and a listener that counts
// the connections that reach it.
package testnet

import (
	"net"
	"sync/atomic"
	"testing"
)

// FreeAddr returns a loopback address (host:port) that was free a moment
// ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free address: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreePort is the port of FreeAddr.
func FreePort(tb testing.TB) int {
	tb.Helper()
	addr, err := net.ResolveTCPAddr("tcp", FreeAddr(tb))
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	return addr.Port
}

// Counter is a loopback listener that accepts every connection, counts
// it and closes it (at once, or once Serve's serve returns): the service
// behind an address a test expects never to be reached (or reached a
// known number of times).
type Counter struct {
	l        net.Listener
	accepted atomic.Int32
}

// Count starts a Counter on a free loopback port; it stops when the test
// ends.
func Count(tb testing.TB) *Counter {
	tb.Helper()
	return Serve(tb, nil)
}

// Serve is Count for a service that says something first: each
// connection is handed to serve before it is closed.
func Serve(tb testing.TB, serve func(net.Conn)) *Counter {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	c := &Counter{l: l}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			if serve != nil {
				serve(conn)
			}
			conn.Close()
		}
	}()
	return c
}

// Port is the port the Counter listens on.
func (c *Counter) Port() int { return c.l.Addr().(*net.TCPAddr).Port }

// Accepted is how many connections the Counter has accepted.
func (c *Counter) Accepted() int { return int(c.accepted.Load()) }
