package secrets

import (
	"bytes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustKeyring(t *testing.T, current []byte, previous ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(current, previous...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return k
}

func mustSeal(t *testing.T, k *Keyring, plaintext, aad string) string {
	t.Helper()
	s, err := k.Seal([]byte(plaintext), []byte(aad))
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return s
}

const aad = "ten_1/channel/email-smtp/password"

func TestSealOpenRoundTrip(t *testing.T) {
	k := mustKeyring(t, testKey(1))
	for _, plaintext := range []string{"", "hunter2", strings.Repeat("ü", 10000)} {
		sealed := mustSeal(t, k, plaintext, aad)
		if !strings.HasPrefix(sealed, "v1:"+k.KeyID()+":") {
			t.Fatalf("sealed %q lacks header v1:%s:", sealed, k.KeyID())
		}
		if !IsSealed(sealed) {
			t.Fatalf("IsSealed(%q) = false", sealed)
		}
		if plaintext != "" && strings.Contains(sealed, plaintext) {
			t.Fatalf("sealed value contains the plaintext")
		}
		got, err := k.Open(sealed, []byte(aad))
		if err != nil || string(got) != plaintext {
			t.Fatalf("Open = %q, %v; want %q", got, err, plaintext)
		}
	}
}

func TestSealUsesFreshNonce(t *testing.T) {
	k := mustKeyring(t, testKey(1))
	if a, b := mustSeal(t, k, "x", aad), mustSeal(t, k, "x", aad); a == b {
		t.Fatalf("two seals of the same plaintext are equal: %q", a)
	}
}

func TestOpenRefusesWithErrDecrypt(t *testing.T) {
	a := mustKeyring(t, testKey(1))
	sealed := mustSeal(t, a, "hunter2", aad)
	id, payload, err := parse(sealed)
	if err != nil {
		t.Fatal(err)
	}

	// A different key that claims the same id: build the keyring by hand.
	impostor := mustKeyring(t, testKey(2))
	impostor.byID = map[string]cipher.AEAD{id: impostor.byID[impostor.currentID]}
	impostor.currentID = id

	tests := []struct {
		name   string
		k      *Keyring
		sealed string
		aad    string
	}{
		{"wrong key with the same id", impostor, sealed, aad},
		{"wrong aad", a, sealed, "ten_2/channel/email-smtp/password"},
		{"empty aad", a, sealed, ""},
	}
	for i := range payload {
		tampered := bytes.Clone(payload)
		tampered[i] ^= 0x01
		tests = append(tests, struct {
			name   string
			k      *Keyring
			sealed string
			aad    string
		}{fmt.Sprintf("payload byte %d flipped", i), a, "v1:" + id + ":" + payloadEncoding.EncodeToString(tampered), aad})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.k.Open(tt.sealed, []byte(tt.aad))
			if !errors.Is(err, ErrDecrypt) || got != nil {
				t.Fatalf("Open = %q, %v; want nil, ErrDecrypt", got, err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	keyA, keyB := testKey(1), testKey(2)
	old := mustSeal(t, mustKeyring(t, keyA), "from A", aad)

	rotated := mustKeyring(t, keyB, keyA)
	if got, err := rotated.Open(old, []byte(aad)); err != nil || string(got) != "from A" {
		t.Fatalf("Open of a value sealed with the previous key = %q, %v", got, err)
	}
	fresh := mustSeal(t, rotated, "from B", aad)
	if !strings.HasPrefix(fresh, "v1:"+KeyID(keyB)+":") {
		t.Fatalf("new value %q not sealed with the current key %s", fresh, KeyID(keyB))
	}

	// Once A is dropped, its values name an unknown key.
	_, err := mustKeyring(t, keyB).Open(old, []byte(aad))
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), KeyID(keyA)) {
		t.Fatalf("Open without the old key: %v; want ErrUnknownKey naming %s", err, KeyID(keyA))
	}
}

func TestOpenMalformed(t *testing.T) {
	k := mustKeyring(t, testKey(1))
	good := mustSeal(t, k, "x", aad)
	body := good[headerLen:]
	for _, s := range []string{
		"",
		"hunter2",
		"v1:",
		"v2:" + good[3:],
		"v1:" + k.KeyID() + body, // missing separator
		"v1:" + strings.ToUpper(k.KeyID()) + ":" + body,    // id not lower hex
		"v1:" + k.KeyID()[:7] + ":" + body,                 // id too short
		"v1:" + k.KeyID() + ":" + body + "=",               // padding
		"v1:" + k.KeyID() + ":" + body[:len(body)-1] + "*", // not base64url
		"v1:" + k.KeyID() + ":" + payloadEncoding.EncodeToString(make([]byte, minPayload-1)),
	} {
		if IsSealed(s) {
			t.Errorf("IsSealed(%q) = true", s)
		}
		if got, err := k.Open(s, []byte(aad)); !errors.Is(err, ErrMalformed) || got != nil {
			t.Errorf("Open(%q) = %q, %v; want ErrMalformed", s, got, err)
		}
	}
}

func TestZeroKeyring(t *testing.T) {
	for _, k := range []*Keyring{nil, {}} {
		if _, err := k.Seal([]byte("x"), nil); !errors.Is(err, ErrNoKey) {
			t.Errorf("Seal: %v; want ErrNoKey", err)
		}
		if _, err := k.Open("v1:00000000:"+payloadEncoding.EncodeToString(make([]byte, minPayload)), nil); !errors.Is(err, ErrNoKey) {
			t.Errorf("Open: %v; want ErrNoKey", err)
		}
		if id := k.KeyID(); id != "" {
			t.Errorf("KeyID = %q; want empty", id)
		}
	}
}

func TestKeyID(t *testing.T) {
	key := testKey(0xab)
	id := KeyID(key)
	if len(id) != 8 || !isLowerHex(id) {
		t.Fatalf("KeyID = %q; want 8 lower-case hex characters", id)
	}
	if strings.Contains(hex.EncodeToString(key), id) {
		t.Fatalf("KeyID %q is a piece of the key", id)
	}
	if id == KeyID(testKey(0xac)) {
		t.Fatalf("two keys share id %q", id)
	}
	if got := mustKeyring(t, key).KeyID(); got != id {
		t.Fatalf("Keyring.KeyID = %q; want %q", got, id)
	}
}

func TestNewKeyringRefusesBadKeys(t *testing.T) {
	colliding := collidingKeys(t)
	for _, tt := range []struct {
		name     string
		current  []byte
		previous [][]byte
	}{
		{"nil current", nil, nil},
		{"short current", make([]byte, 31), nil},
		{"long previous", testKey(1), [][]byte{make([]byte, 33)}},
		{"colliding ids", colliding[0], colliding[1:]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewKeyring(tt.current, tt.previous...); !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("NewKeyring: %v; want ErrInvalidKey", err)
			}
		})
	}
}

func TestNewKeyringIgnoresRepeatedKeys(t *testing.T) {
	k := mustKeyring(t, testKey(1), testKey(1), testKey(2), testKey(2))
	if len(k.byID) != 2 || k.KeyID() != KeyID(testKey(1)) {
		t.Fatalf("keyring holds %d keys, current %s", len(k.byID), k.KeyID())
	}
}

// collidingKeys finds two different keys with the same 32-bit id by a
// deterministic birthday search (about 2^16 tries).
func collidingKeys(t *testing.T) [][]byte {
	t.Helper()
	seen := map[string][]byte{}
	for i := uint32(0); i < 1<<20; i++ {
		key := make([]byte, KeySize)
		key[0], key[1], key[2], key[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		id := KeyID(key)
		if other, ok := seen[id]; ok {
			return [][]byte{other, key}
		}
		seen[id] = key
	}
	t.Fatal("no id collision found")
	return nil
}
