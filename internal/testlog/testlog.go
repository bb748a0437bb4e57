// Package testlog collects the log output a service writes from many
// goroutines while a test reads it, and looks for secrets in it (or in
// any other output a test holds).
package testlog

import (
	"bytes"
	"encoding/base64"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers. The
// zero value is empty and ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Leaks reports which of the named secrets data holds, in clear or in
// base64 (standard or URL, padded or not).
func Leaks(data []byte, secrets map[string]string) []string {
	var found []string
	for name, s := range secrets {
		b := []byte(s)
		for _, form := range []string{s, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
			if bytes.Contains(data, []byte(form)) {
				found = append(found, name)
				break
			}
		}
	}
	return found
}
