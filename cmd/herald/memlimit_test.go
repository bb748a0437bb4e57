package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"500MiB": 500 << 20, "1.5GiB": 3 << 29, "800MB": 800e6, "524288000": 524288000,
		" 2GiB ": 2 << 30, "off": math.MaxInt64, "OFF": math.MaxInt64, "16MiB": 16 << 20,
	} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "500 potatoes", "-1GiB", "1MiB", "NaN", "Inf"} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("%q: %d, want an error", in, got)
		}
	}
}

func TestResolveMemoryLimit(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cases := []struct {
		flag            string
		env             map[string]string
		bytes           int64
		source, ignored string
	}{
		{"", nil, math.MaxInt64, "none", ""},
		{"", map[string]string{envMemoryLimit: "500MiB"}, 500 << 20, envMemoryLimit, ""},
		{"300MiB", map[string]string{envMemoryLimit: "500MiB"}, 300 << 20, "--memory-limit", ""},
		{"", map[string]string{"GOMEMLIMIT": "400MiB", envMemoryLimit: "500MiB"}, keepLimit, "GOMEMLIMIT", envMemoryLimit},
		{"300MiB", map[string]string{"GOMEMLIMIT": "400MiB"}, keepLimit, "GOMEMLIMIT", "--memory-limit"},
		{"", map[string]string{"GOMEMLIMIT": "400MiB"}, keepLimit, "GOMEMLIMIT", ""},
	}
	for _, c := range cases {
		m, err := resolveMemoryLimit(c.flag, env(c.env))
		if err != nil || m.bytes != c.bytes || m.source != c.source || m.ignored != c.ignored {
			t.Errorf("flag %q env %v: %+v, %v", c.flag, c.env, m, err)
		}
	}
	if _, err := resolveMemoryLimit("", env(map[string]string{envMemoryLimit: "huge"})); err == nil || !strings.Contains(err.Error(), envMemoryLimit) {
		t.Errorf("a bad HERALD_MEMORY_LIMIT: %v", err)
	}
}

// TestServeMemoryLimit: herald serve applies HERALD_MEMORY_LIMIT to the
// runtime while it serves, logs it at start, and a bad one refuses to start.
func TestServeMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv(envMemoryLimit, "bogus")
	err := run(context.Background(), []string{"serve", "--data", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), envMemoryLimit) {
		t.Fatalf("a bad limit: %v", err)
	}
	t.Setenv(envMemoryLimit, "500MiB")
	before := debug.SetMemoryLimit(-1)
	ctx, cancel := context.WithCancel(context.Background())
	done, logs := serveReady(t, ctx)
	during := debug.SetMemoryLimit(-1)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if during != 500<<20 {
		t.Errorf("limit while serving %d, want %d", during, 500<<20)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("limit after serve %d, want the one before, %d", after, before)
	}
	if !strings.Contains(logs.String(), `"msg":"memory limit","limit":"500 MiB"`) || !strings.Contains(logs.String(), `"source":"HERALD_MEMORY_LIMIT"`) {
		t.Errorf("no memory limit logged:\n%s", logs.String())
	}
}

func TestCacheUnderLimit(t *testing.T) {
	cases := []struct {
		cacheMiB int
		set      bool
		limit    int64
		want     int
	}{
		{256, false, math.MaxInt64, 256}, // no limit: the default
		{256, false, 400 << 20, 100},     // a quarter of the limit
		{256, false, 2 << 30, 256},       // a large limit: the default
		{256, true, 400 << 20, 256},      // HERALD_CACHE_MIB given wins
		{256, false, 32 << 20, 16},       // never under 16 MiB
	}
	for _, c := range cases {
		if got := cacheUnderLimit(c.cacheMiB, c.set, c.limit); got != c.want {
			t.Errorf("cacheUnderLimit(%d, %v, %d MiB) = %d, want %d", c.cacheMiB, c.set, c.limit>>20, got, c.want)
		}
	}
}

func TestResolveGCPercent(t *testing.T) {
	for env, want := range map[string]gcPercent{
		"":    {percent: serveGCPercent, source: "default"},
		" ":   {percent: serveGCPercent, source: "default"},
		"50":  {percent: keepGC, source: "GOGC"},
		"off": {percent: keepGC, source: "GOGC"},
	} {
		if got := resolveGCPercent(func(k string) string {
			if k == "GOGC" {
				return env
			}
			return ""
		}); got != want {
			t.Errorf("GOGC %q: %+v, want %+v", env, got, want)
		}
	}
}

// currentGC reads the collector's GOGC (-1: off).
func currentGC() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestServeGCPercent: without GOGC, herald serve runs the collector at
// serveGCPercent while it serves and logs it; the setting before is back
// once it stops. With GOGC set, the runtime's setting stays.
func TestServeGCPercent(t *testing.T) {
	for _, c := range []struct {
		gogc, source string
		during       int // 0: the setting before serve
	}{{"", "default", serveGCPercent}, {"75", "GOGC", 0}} {
		t.Setenv("GOGC", c.gogc)
		before := currentGC()
		want := c.during
		if want == 0 {
			want = before
		}
		ctx, cancel := context.WithCancel(context.Background())
		done, logs := serveReady(t, ctx)
		during := currentGC()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if during != want {
			t.Errorf("GOGC %q: %d while serving, want %d", c.gogc, during, want)
		}
		if after := currentGC(); after != before {
			t.Errorf("GOGC %q: %d after serve, want the one before, %d", c.gogc, after, before)
		}
		if line := fmt.Sprintf(`"msg":"garbage collector","gogc":%d,"source":%q`, want, c.source); !strings.Contains(logs.String(), line) {
			t.Errorf("GOGC %q: no %s logged:\n%s", c.gogc, line, logs.String())
		}
	}
}
