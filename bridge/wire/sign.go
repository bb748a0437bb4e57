package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Header names of a signed Bridge request.
const (
	HeaderTimestamp = "x-svc-timestamp" // unix seconds, decimal
	HeaderSignature = "x-svc-signature" // lowercase hex HMAC-SHA256
)

// Signature errors, returned by [Verify]. A Bridge answers every one of them
// with 401.
var (
	// ErrNotSigned: the timestamp or the signature header is missing.
	ErrNotSigned = errors.New("bridge: request not signed")
	// ErrInvalidHeader: the timestamp header is not whole unix seconds in decimal.
	ErrInvalidHeader = errors.New("bridge: invalid signature timestamp")
	// ErrNoValidSignature: the signature matches none of the accepted secrets
	// (or no secret is configured).
	ErrNoValidSignature = errors.New("bridge: no valid signature")
	// ErrStale: the timestamp is further than the tolerance from the clock, in
	// the past or in the future.
	ErrStale = errors.New("bridge: signature timestamp outside tolerance")
)

// DefaultTolerance is how far a request's timestamp may be from the
// verifier's clock, in either direction.
const DefaultTolerance = 300 * time.Second

// Sign returns the signature of a request: the lowercase hex HMAC-SHA256 of
// timestamp + "." + body, keyed with the bytes of secret exactly as given (no
// decoding). timestamp is whole unix seconds and must be sent, in decimal, as
// the [HeaderTimestamp] header beside the signature in [HeaderSignature].
func Sign(secret string, timestamp int64, body []byte) string {
	return hex.EncodeToString(mac(secret, strconv.FormatInt(timestamp, 10), body))
}

func mac(secret, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a signed request against its raw body, the values of its
// [HeaderTimestamp] and [HeaderSignature] headers, and the clock now. It
// accepts the signature of any non-empty secret in secrets (during a rotation,
// pass the new secret and the old ones). It returns nil or one of:
//
//   - [ErrNotSigned]: timestamp or signature is empty;
//   - [ErrInvalidHeader]: timestamp is not decimal digits;
//   - [ErrNoValidSignature]: no secret produces signature (a signature must
//     be lowercase hex; no secret given also lands here);
//   - [ErrStale]: the signature is good but timestamp is more than tolerance
//     seconds before or after now (whole seconds are compared, so a timestamp
//     exactly tolerance away passes).
//
// A tolerance ≤ 0 means [DefaultTolerance]. Comparisons are constant-time.
func Verify(body []byte, timestamp, signature string, now time.Time, tolerance time.Duration, secrets ...string) error {
	if timestamp == "" || signature == "" {
		return ErrNotSigned
	}
	if !isDigits(timestamp) {
		return fmt.Errorf("%w: %q", ErrInvalidHeader, timestamp)
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrInvalidHeader, timestamp)
	}
	if !signedByAny(body, timestamp, signature, secrets) {
		return ErrNoValidSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	// time.Time.Sub saturates instead of overflowing for absurd timestamps.
	if skew := time.Unix(now.Unix(), 0).Sub(time.Unix(ts, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%w: timestamp %d is %s away (tolerance %s)", ErrStale, ts, skew, tolerance)
	}
	return nil
}

func signedByAny(body []byte, timestamp, signature string, secrets []string) bool {
	got := []byte(signature)
	ok := false
	for _, s := range secrets {
		if s == "" {
			continue
		}
		want := hex.AppendEncode(nil, mac(s, timestamp, body))
		if hmac.Equal(want, got) {
			ok = true // keep going: the time taken does not tell which secret matched
		}
	}
	return ok
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
