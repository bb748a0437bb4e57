package httpapi_test

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
)

// streamClients is how many streams TestInboxStreamThousandClients holds.
const streamClients = 1000

// maxBytesPerStream bounds the Go memory (heap in use and goroutine
// stacks) one open stream may add to the process, its client's end of the
// loopback connection included.
const maxBytesPerStream = 64 << 10

// TestInboxStreamThousandClients: one process holds 1,000 concurrent
// inbox streams (1,000 subscribers) with bounded memory: the growth of the
// Go heap in use and goroutine stacks per stream is measured and bounded
// (BENCHMARKS.md reports the figure), and a message sent to one of the
// subscribers still reaches its stream while all are open.
func TestInboxStreamThousandClients(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 streams")
	}
	f := newInboxFixture(t, testherald.Options{Env: map[string]string{"HERALD_RATE_LIMIT": "0"}})
	ids := f.h.SeedTopic(f.tenant, "everyone", streamClients, "example.com")
	tokens := make([]string, len(ids))
	for i, id := range ids {
		tokens[i] = f.token(id)
	}
	addr := strings.TrimPrefix(f.h.URL(), "http://")
	open := func(tok string) (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "GET /v1/inbox/stream?token=%s HTTP/1.1\r\nHost: herald\r\nAccept: text/event-stream\r\n\r\n", url.QueryEscape(tok))
		// Read until the initial counts event has come whole.
		var got []byte
		buf := make([]byte, 1024)
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for !bytes.Contains(got, []byte("event: counts\n")) || !bytes.HasSuffix(bytes.TrimRight(got, "\r\n0"), []byte("}")) {
			n, err := c.Read(buf)
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("%w after %q", err, got)
			}
			got = append(got, buf[:n]...)
		}
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) {
			c.Close()
			return nil, fmt.Errorf("answer %q", got)
		}
		return c, nil
	}

	heap0, rss0 := memNow()
	conns := make([]net.Conn, len(tokens))
	var wg sync.WaitGroup
	errs := make(chan error, len(tokens))
	sem := make(chan struct{}, 16)
	began := time.Now()
	for i, tok := range tokens {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := open(tok)
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	opened := time.Since(began)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	close(errs)
	for err := range errs {
		t.Fatalf("a stream did not open: %v", err)
	}
	heap1, rss1 := memNow()
	perStream := (heap1 - heap0) / streamClients
	t.Logf("%d streams open in %v; Go heap in use + stacks %.1f MiB → %.1f MiB: %.1f KiB a stream; RSS %.1f MiB → %.1f MiB: %.1f KiB a stream",
		streamClients, opened.Round(time.Millisecond), mib(heap0), mib(heap1), float64(perStream)/1024,
		mib(rss0), mib(rss1), float64((rss1-rss0)/streamClients)/1024)
	if perStream > maxBytesPerStream {
		t.Fatalf("%d bytes a stream, want at most %d", perStream, maxBytesPerStream)
	}

	// Every stream is live: a message to the last subscriber reaches it.
	last := conns[len(conns)-1]
	sent := time.Now()
	f.trigger(ids[len(ids)-1], "to the thousandth")
	_ = last.SetReadDeadline(time.Now().Add(20 * time.Second))
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("to the thousandth")) {
		n, err := last.Read(buf)
		if err != nil {
			t.Fatalf("the thousandth stream: %v after %q", err, got)
		}
		got = append(got, buf[:n]...)
	}
	t.Logf("a trigger to the thousandth subscriber reached its stream in %v (run included)", time.Since(sent).Round(time.Millisecond))
}

// memNow returns the Go heap in use plus goroutine stacks, after a
// collection, and the process's resident set size (0 where /proc is not).
func memNow() (goBytes, rss int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	goBytes = int64(ms.HeapInuse + ms.StackInuse)
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				rss = kb << 10
			}
		}
	}
	return goBytes, rss
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
