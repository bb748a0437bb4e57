// Package testnet gives tests loopback addresses that nothing listens on:
// for a server a test starts (a child process, a NATS route), or for a
// destination that must refuse the connection.
package testnet

import (
	"net"
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
