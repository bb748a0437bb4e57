package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	key := make([]byte, KeySize)
	for i := range key {
		key[i] = byte(250 - i) // high bytes, so the alphabets differ
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		s := enc.EncodeToString(key)
		got, err := ParseKey(" " + s + "\n")
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseKey(%q) = %x, %v", s, got, err)
		}
	}
}

func TestParseKeyRefuses(t *testing.T) {
	for _, tt := range []struct{ name, in, reason string }{
		{"empty", "", "empty"},
		{"blank", " \n", "empty"},
		{"not base64", "this is not base64!", "not base64"},
		{"hex", strings.Repeat("ab", KeySize), "bytes"},
		{"31 bytes", base64.StdEncoding.EncodeToString(make([]byte, 31)), "31 bytes"},
		{"33 bytes", base64.StdEncoding.EncodeToString(make([]byte, 33)), "33 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseKey(tt.in)
			if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("ParseKey: %v; want ErrInvalidKey saying %q", err, tt.reason)
			}
			if in := strings.TrimSpace(tt.in); in != "" && strings.Contains(err.Error(), in) {
				t.Fatalf("error %q repeats the input", err)
			}
		})
	}
}

func assertMode0600(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %04o; want 0600", path, st.Mode().Perm())
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "master.key")
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("first call = %d bytes, created %v, %v", len(key), created, err)
	}
	assertMode0600(t, path)
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Fatalf("created directory has mode %04o; want 0700", st.Mode().Perm())
	}

	again, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("second call = created %v, same key %v, %v", created, bytes.Equal(again, key), err)
	}
}

func TestLoadOrCreateKeyFileRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // umask may have narrowed it
			t.Fatal(err)
		}
		return path
	}
	valid := base64.StdEncoding.EncodeToString(testKey(7))
	for _, tt := range []struct {
		name string
		path string
		want error
	}{
		{"world readable", write("world.key", valid, 0o644), ErrFileMode},
		{"group readable", write("group.key", valid, 0o640), ErrFileMode},
		{"empty", write("empty.key", "\n", 0o600), ErrEmptyFile},
		{"not a key", write("bad.key", "hello", 0o600), ErrInvalidKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadFile(tt.path)
			_, _, err := LoadOrCreateKeyFile(tt.path)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("LoadOrCreateKeyFile: %v; want %v naming the path", err, tt.want)
			}
			if after, _ := os.ReadFile(tt.path); !bytes.Equal(before, after) {
				t.Fatalf("the file was rewritten")
			}
		})
	}
}

// envOf returns an env func reading from vars.
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestLoadKeyringFromEnv(t *testing.T) {
	cur, prev1, prev2 := testKey(1), testKey(2), testKey(3)
	dir := t.TempDir()
	k, info, err := LoadKeyring(envOf(map[string]string{
		EnvMasterKey:    base64.StdEncoding.EncodeToString(cur),
		EnvPreviousKeys: base64.URLEncoding.EncodeToString(prev1) + ", ," + base64.RawStdEncoding.EncodeToString(prev2),
	}), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Source: SourceEnv, KeyID: KeyID(cur), PreviousKeyIDs: []string{KeyID(prev1), KeyID(prev2)}}
	if info.Source != want.Source || info.Path != "" || info.Generated || info.KeyID != want.KeyID ||
		strings.Join(info.PreviousKeyIDs, ",") != strings.Join(want.PreviousKeyIDs, ",") {
		t.Fatalf("Info = %+v; want %+v", info, want)
	}
	old := mustSeal(t, mustKeyring(t, prev2), "old", aad)
	if got, err := k.Open(old, []byte(aad)); err != nil || string(got) != "old" {
		t.Fatalf("Open of a value sealed with a previous key = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, MasterKeyFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a key file was written although HERALD_MASTER_KEY is set: %v", err)
	}
}

func TestLoadKeyringEmbeddedGeneratesKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "herald-data")
	k, info, err := LoadKeyring(envOf(nil), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MasterKeyFile)
	if info.Source != SourceFile || info.Path != path || !info.Generated || info.KeyID != k.KeyID() {
		t.Fatalf("Info = %+v", info)
	}
	assertMode0600(t, path)
	sealed := mustSeal(t, k, "x", aad)

	k2, info2, err := LoadKeyring(envOf(nil), dir, true)
	if err != nil || info2.Generated || info2.KeyID != info.KeyID {
		t.Fatalf("second start: Info = %+v, %v", info2, err)
	}
	if got, err := k2.Open(sealed, []byte(aad)); err != nil || string(got) != "x" {
		t.Fatalf("second start cannot open: %q, %v", got, err)
	}
}

func TestLoadKeyringRefuses(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(testKey(1))
	for _, tt := range []struct {
		name     string
		vars     map[string]string
		embedded bool
		want     error
		mention  string
	}{
		{"external NATS without key", nil, false, ErrMasterKeyRequired, EnvMasterKey},
		{"bad master key", map[string]string{EnvMasterKey: "short"}, true, ErrInvalidKey, EnvMasterKey},
		{"bad previous key", map[string]string{EnvMasterKey: good, EnvPreviousKeys: good + ",nope"}, false, ErrInvalidKey, EnvPreviousKeys + ", item 2"},
		{"previous key of the wrong size", map[string]string{EnvMasterKey: good, EnvPreviousKeys: base64.StdEncoding.EncodeToString(make([]byte, 16))}, false, ErrInvalidKey, "16 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadKeyring(envOf(tt.vars), t.TempDir(), tt.embedded)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("LoadKeyring: %v; want %v mentioning %q", err, tt.want, tt.mention)
			}
		})
	}
}

func TestLoadKeyringRefusesInsecureKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MasterKeyFile)
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(testKey(1))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadKeyring(envOf(nil), dir, true); !errors.Is(err, ErrFileMode) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("LoadKeyring: %v; want ErrFileMode telling how to fix it", err)
	}
}

func TestLoadOrCreateFileCannotCreate(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKeyFile(filepath.Join(notADir, "master.key")); err == nil {
		t.Fatal("LoadOrCreateKeyFile under a regular file succeeded")
	}
	if _, _, err := LoadOrCreateTokenFile(filepath.Join(notADir, "sub", "admin.token"), "", 8); err == nil {
		t.Fatal("LoadOrCreateTokenFile under a regular file succeeded")
	}
}
