package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidDuration is returned by [ParseDuration] and when a [Duration] on
// the wire is neither a non-negative number of seconds nor a duration string.
var ErrInvalidDuration = errors.New("bridge: invalid duration")

// MaxSeconds is the longest span a time.Duration holds, in whole seconds.
const MaxSeconds = float64(math.MaxInt64 / int64(time.Second))

// Duration is a span of time as the protocol carries it (a waitForEvent
// timeout, a digest window): either a JSON number of seconds (3600, 1.5) or a
// duration string ("1h", "90m", "1h30m", "2d"; see [ParseDuration]).
// Unmarshalling validates the value, so a decoded Duration always converts;
// marshalling writes the form it was read in. The zero Duration is 0 seconds
// and marshals as null.
type Duration struct {
	d   time.Duration
	lit string // the JSON literal as read or built
}

// DurationOf returns d in the wire form this package writes: a number of
// seconds, fractional when d is not whole seconds. d must not be negative.
func DurationOf(d time.Duration) Duration {
	return Duration{d: d, lit: strconv.FormatFloat(d.Seconds(), 'f', -1, 64)}
}

// Duration returns the span as a time.Duration.
func (d Duration) Duration() time.Duration { return d.d }

// String returns the span as the wire had it, without JSON quotes: "3600" or
// "1h". The zero Duration is "0".
func (d Duration) String() string {
	if d.lit == "" {
		return "0"
	}
	return strings.Trim(d.lit, `"`)
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d.lit == "" {
		return []byte("null"), nil
	}
	return []byte(d.lit), nil
}

// UnmarshalJSON accepts a non-negative JSON number of seconds or a string that
// [ParseDuration] accepts; anything else is an error wrapping
// [ErrInvalidDuration]. (A JSON null leaves a *Duration field nil before this
// method is reached.)
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%w: %s", ErrInvalidDuration, b)
		}
		v, err := ParseDuration(s)
		if err != nil {
			return err
		}
		// A valid duration string holds no character JSON must escape.
		*d = Duration{d: v, lit: `"` + s + `"`}
		return nil
	}
	v, err := parseSeconds(string(b))
	if err != nil {
		return err
	}
	*d = Duration{d: v, lit: string(b)}
	return nil
}

// parseSeconds reads a JSON number of seconds.
func parseSeconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !json.Valid([]byte(s)) || f < 0 || f > MaxSeconds {
		return 0, fmt.Errorf("%w: %s (want seconds ≥ 0 or a duration string)", ErrInvalidDuration, s)
	}
	return time.Duration(math.Round(f * float64(time.Second))), nil
}

// ParseDuration reads a non-negative duration string: what time.ParseDuration
// accepts ("300ms", "10m", "1h30m"), optionally preceded by a number of days
// with the unit "d" ("1d", "1.5d", "2d12h"). Signs and bare numbers are
// refused (a bare number is ambiguous as a string; send it as a JSON number).
// Errors wrap [ErrInvalidDuration].
func ParseDuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) { return 0, fmt.Errorf("%w: %q", ErrInvalidDuration, s) }
	if s == "" || s[0] == '+' || s[0] == '-' {
		return bad()
	}
	rest := s
	var days float64
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		if !isDecimal(s[:i]) {
			return bad()
		}
		days, _ = strconv.ParseFloat(s[:i], 64) // isDecimal makes it parse
		if days*86400 > MaxSeconds {
			return bad()
		}
		rest = s[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 || rest[0] == '+' || rest[0] == '-' {
			return bad()
		}
	}
	total := time.Duration(math.Round(days * 86400 * float64(time.Second)))
	if total > math.MaxInt64-d {
		return bad()
	}
	return total + d, nil
}

// isDecimal reports whether s is digits with at most one inner decimal point:
// "1", "1.5", but not "", ".", "1.", "1e3" or "0x1".
func isDecimal(s string) bool {
	digits, dot := 0, -1
	for i, c := range []byte(s) {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && dot < 0:
			dot = i
		default:
			return false
		}
	}
	return digits > 0 && dot != 0 && dot != len(s)-1
}
