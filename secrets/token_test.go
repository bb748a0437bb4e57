package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewToken(t *testing.T) {
	counts := map[rune]int{}
	seen := map[string]bool{}
	for range 2000 {
		tok, err := NewToken("hk_", 32)
		if err != nil {
			t.Fatal(err)
		}
		body, ok := strings.CutPrefix(tok, "hk_")
		if !ok || len(body) != 32 {
			t.Fatalf("token %q: want hk_ and 32 characters", tok)
		}
		for _, c := range body {
			if !strings.ContainsRune(base62, c) {
				t.Fatalf("token %q has %q outside [0-9A-Za-z]", tok, c)
			}
			counts[c]++
		}
		if seen[tok] {
			t.Fatalf("token %q drawn twice", tok)
		}
		seen[tok] = true
	}
	// 64000 draws, about 1032 per character: every one must show up, and a
	// modulo bias (the first 8 characters twice as likely with b%62) would
	// stand far outside this band.
	for _, c := range base62 {
		if n := counts[c]; n < 850 || n > 1250 {
			t.Errorf("character %q drawn %d times; want about 1032", c, n)
		}
	}
}

func TestNewTokenLengths(t *testing.T) {
	for _, n := range []int{1, 7, 64} {
		tok, err := NewToken("", n)
		if err != nil || len(tok) != n {
			t.Errorf("NewToken(\"\", %d) = %q, %v", n, tok, err)
		}
	}
	for _, n := range []int{0, -1} {
		if _, err := NewToken("x", n); !errors.Is(err, ErrTokenLength) {
			t.Errorf("NewToken(%d): %v; want ErrTokenLength", n, err)
		}
	}
}

func TestLoadOrCreateTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.token")
	tok, created, err := LoadOrCreateTokenFile(path, "hadm_", 40)
	if err != nil || !created || !strings.HasPrefix(tok, "hadm_") || len(tok) != len("hadm_")+40 {
		t.Fatalf("first call = %q, created %v, %v", tok, created, err)
	}
	assertMode0600(t, path)
	again, created, err := LoadOrCreateTokenFile(path, "hadm_", 40)
	if err != nil || created || again != tok {
		t.Fatalf("second call = %q, created %v, %v; want %q", again, created, err, tok)
	}

	// An operator's own token is kept as it is.
	own := filepath.Join(t.TempDir(), "internal.token")
	if err := os.WriteFile(own, []byte("  my-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, created, err := LoadOrCreateTokenFile(own, "hint_", 40); err != nil || created || got != "my-token" {
		t.Fatalf("own token = %q, created %v, %v", got, created, err)
	}

	if err := os.Chmod(own, 0o604); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateTokenFile(own, "hint_", 40); !errors.Is(err, ErrFileMode) {
		t.Fatalf("world-readable token file: %v; want ErrFileMode", err)
	}
	if _, _, err := LoadOrCreateTokenFile(filepath.Join(t.TempDir(), "t"), "", 0); !errors.Is(err, ErrTokenLength) {
		t.Fatalf("n = 0: %v; want ErrTokenLength", err)
	}
}
