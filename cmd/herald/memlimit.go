package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// envMemoryLimit is herald serve's memory limit setting, like
// --memory-limit.
const envMemoryLimit = "HERALD_MEMORY_LIMIT"

// keepLimit, as a memoryLimit's bytes, leaves the runtime's limit as it
// is.
const keepLimit = -1

// memoryLimit is the Go runtime's soft memory limit herald serve runs with
// and where it came from.
type memoryLimit struct {
	// bytes is the limit; math.MaxInt64 is none; keepLimit the one the
	// runtime has (GOMEMLIMIT's).
	bytes int64
	// source is "--memory-limit", HERALD_MEMORY_LIMIT, GOMEMLIMIT or
	// "none".
	source string
	// ignored names a herald setting that GOMEMLIMIT overrode, or "".
	ignored string
}

// resolveMemoryLimit decides the soft memory limit from the --memory-limit
// flag (empty: not given) and the environment. GOMEMLIMIT, the Go
// runtime's own variable (which the runtime has already applied before
// main runs), wins over both herald settings; among those, the flag beats
// HERALD_MEMORY_LIMIT. "off" is no limit.
func resolveMemoryLimit(flag string, getenv func(string) string) (memoryLimit, error) {
	if strings.TrimSpace(getenv("GOMEMLIMIT")) != "" {
		// The runtime parsed and applied it (it refuses to start on a bad
		// one): leave it as it is.
		m := memoryLimit{bytes: keepLimit, source: "GOMEMLIMIT"}
		switch {
		case flag != "":
			m.ignored = "--memory-limit"
		case strings.TrimSpace(getenv(envMemoryLimit)) != "":
			m.ignored = envMemoryLimit
		}
		return m, nil
	}
	source, v := "--memory-limit", flag
	if v == "" {
		source, v = envMemoryLimit, strings.TrimSpace(getenv(envMemoryLimit))
	}
	if v == "" {
		return memoryLimit{bytes: math.MaxInt64, source: "none"}, nil
	}
	n, err := parseByteSize(v)
	if err != nil {
		return memoryLimit{}, fmt.Errorf("%s: %w", source, err)
	}
	return memoryLimit{bytes: n, source: source}, nil
}

// apply sets the runtime's soft memory limit and returns the previous one
// and the one now in force.
func (m memoryLimit) apply() (previous, now int64) {
	previous = debug.SetMemoryLimit(m.bytes)
	return previous, debug.SetMemoryLimit(-1)
}

// formatLimit is a limit as the start-up log shows it.
func formatLimit(b int64) string {
	if b == math.MaxInt64 {
		return "off"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

// byteUnits are the suffixes parseByteSize accepts, longest first: those
// of GOMEMLIMIT (B, KiB, MiB, GiB, TiB) and their decimal kin.
var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// parseByteSize parses a size such as "500MiB", "1.5GiB", "800MB" or
// "524288000" (bytes), or "off" (math.MaxInt64: no limit). A limit under
// 16 MiB is refused: the process could not run under it.
func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return math.MaxInt64, nil
	}
	num, mult := s, 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("%q is not a size such as 500MiB, 2GiB, 800MB or off", s)
	}
	b := f * mult
	if b >= math.MaxInt64 {
		return math.MaxInt64, nil
	}
	if b < 16<<20 {
		return 0, fmt.Errorf("%q is under 16MiB", s)
	}
	return int64(b), nil
}

// cacheShare is the part of a memory limit the engine's caches get when
// HERALD_CACHE_MIB is not set: their budget is of estimated bytes, and a
// cache filled to a budget near the limit would leave the collector
// running without end.
const cacheShare = 4

// cacheUnderLimit returns the engine's cache budget in MiB: cacheMiB as
// configured when set (HERALD_CACHE_MIB given) or when there is no limit
// (math.MaxInt64), else the smaller of cacheMiB and a cacheShare-th of
// the limit, at least 16 MiB.
func cacheUnderLimit(cacheMiB int, set bool, limit int64) int {
	if set || limit == math.MaxInt64 || limit <= 0 {
		return cacheMiB
	}
	return max(16, min(cacheMiB, int(limit/cacheShare>>20)))
}

// serveGCPercent is the Go collector's GOGC herald serve runs with when
// GOGC is not set. herald serve keeps a small live heap and allocates
// fast (every event it appends, projects and hands on is decoded and
// encoded), so at the runtime's own 100 it collects several times a
// second: at a broadcast of 200,000 runs the collector took 13 % of the
// process's CPU. At 200 it collects half as often for a heap at most half
// as large again. A memory limit (--memory-limit) still holds: near it
// the runtime collects sooner whatever GOGC says.
const serveGCPercent = 200

// gcPercent is the collector setting herald serve runs with and where it
// came from.
type gcPercent struct {
	// percent is the GOGC to set, or keepGC: GOGC's, which the runtime
	// has applied.
	percent int
	source  string
}

// keepGC, as a gcPercent's percent, leaves the runtime's setting as it is.
const keepGC = -2

// resolveGCPercent decides herald serve's GOGC: the runtime's own GOGC
// variable when it is set (the runtime has applied it before main runs),
// else serveGCPercent.
func resolveGCPercent(getenv func(string) string) gcPercent {
	if strings.TrimSpace(getenv("GOGC")) != "" {
		return gcPercent{percent: keepGC, source: "GOGC"}
	}
	return gcPercent{percent: serveGCPercent, source: "default"}
}

// apply sets the collector's GOGC and returns the previous one and the one
// now in force (-1: off).
func (g gcPercent) apply() (previous, now int) {
	if g.percent == keepGC {
		now = debug.SetGCPercent(-1)
		debug.SetGCPercent(now)
		return now, now
	}
	previous = debug.SetGCPercent(g.percent)
	return previous, g.percent
}
