package secrets

import (
	"crypto/rand"
	"fmt"
)

// base62 is the alphabet of tokens: digits, upper case, lower case.
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewToken returns prefix followed by n characters drawn uniformly from
// [0-9A-Za-z] with crypto/rand, for API keys, signing secrets and the admin
// and internal tokens. Each character carries log2(62) ≈ 5.95 bits: 32
// characters are about 190 bits. n below 1 is [ErrTokenLength].
func NewToken(prefix string, n int) (string, error) {
	if n < 1 {
		return "", fmt.Errorf("%w: got %d", ErrTokenLength, n)
	}
	out := make([]byte, len(prefix), len(prefix)+n)
	copy(out, prefix)
	// Rejection sampling: a byte below 248 = 4×62 maps onto the alphabet
	// without bias; larger bytes (3% of them) are drawn again.
	buf := make([]byte, n+n/8+8)
	for len(out) < cap(out) {
		rand.Read(buf) // never fails: crypto/rand aborts the program instead
		for _, b := range buf {
			if int(b) < 4*len(base62) && len(out) < cap(out) {
				out = append(out, base62[int(b)%len(base62)])
			}
		}
	}
	return string(out), nil
}

// LoadOrCreateTokenFile returns the token stored in the file at path
// (surrounding white space removed). When the file does not exist it
// generates NewToken(prefix, n), writes it to a new file of mode 0600 and
// reports created. An existing file's content is returned as it is, whatever
// its prefix or length, so an operator may put a token of their own there.
//
// Errors: [ErrTokenLength], [ErrFileMode] (an existing file accessible to
// group or others), [ErrEmptyFile], or an I/O error. An existing file is
// never overwritten.
func LoadOrCreateTokenFile(path, prefix string, n int) (token string, created bool, err error) {
	fresh, err := NewToken(prefix, n)
	if err != nil {
		return "", false, err
	}
	return loadOrCreateFile(path, func() string { return fresh })
}
