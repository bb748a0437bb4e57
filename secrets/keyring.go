package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// KeySize is the length in bytes of every key: AES-256.
const KeySize = 32

const (
	// version is the first field of every sealed value.
	version = "v1"
	// idLen is the number of hex characters of a key id.
	idLen = 8
	// headerLen is the length of "v1:<id>:".
	headerLen = len(version) + 1 + idLen + 1
	// minPayload is the shortest nonce||ciphertext||tag: an empty plaintext.
	minPayload = 12 + 16
)

// payloadEncoding encodes nonce||ciphertext in a sealed value. Strict
// decoding makes the text canonical: two different strings never open to the
// same value.
var payloadEncoding = base64.RawURLEncoding.Strict()

// Keyring seals with its current key and opens values sealed with the current
// key or any previous one, so keys can rotate without re-sealing everything
// at once.
//
// A Keyring is immutable after [NewKeyring] and safe for concurrent use.
type Keyring struct {
	currentID string
	byID      map[string]cipher.AEAD
}

// NewKeyring returns a keyring that seals with current and also opens values
// sealed with any of previous. Every key must be [KeySize] bytes. A previous
// key equal to the current one, or repeated, is ignored. Two different keys
// whose ids collide are refused with [ErrInvalidKey]: a sealed value names its
// key by id only.
//
// The keyring does not retain the slices: the caller may clear them
// afterwards.
func NewKeyring(current []byte, previous ...[]byte) (*Keyring, error) {
	k := &Keyring{byID: make(map[string]cipher.AEAD, 1+len(previous))}
	seen := make(map[string][]byte, 1+len(previous))
	for i, key := range append([][]byte{current}, previous...) {
		if len(key) != KeySize {
			return nil, fmt.Errorf("%w: %s is %d bytes, want %d", ErrInvalidKey, keyName(i), len(key), KeySize)
		}
		id := KeyID(key)
		if other, ok := seen[id]; ok {
			if hmac.Equal(other, key) {
				continue
			}
			return nil, fmt.Errorf("%w: %s has the same id %q as an earlier key; generate another key", ErrInvalidKey, keyName(i), id)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidKey, keyName(i), err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidKey, keyName(i), err)
		}
		seen[id] = key
		k.byID[id] = aead
		if i == 0 {
			k.currentID = id
		}
	}
	return k, nil
}

// keyName names the i-th key given to NewKeyring in an error message.
func keyName(i int) string {
	if i == 0 {
		return "current key"
	}
	return fmt.Sprintf("previous key %d", i)
}

// KeyID returns the id a sealed value carries for key: the first 8 hex
// characters of HMAC-SHA256(key, "herald-key-id"). It reveals nothing usable
// about the key and is safe to log.
func KeyID(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("herald-key-id"))
	return hex.EncodeToString(mac.Sum(nil))[:idLen]
}

// KeyID returns the id of the key that [Keyring.Seal] uses, or "" for a nil
// or zero Keyring.
func (k *Keyring) KeyID() string {
	if k == nil {
		return ""
	}
	return k.currentID
}

// Seal encrypts plaintext with the current key under AES-256-GCM and a fresh
// random nonce, and returns the printable sealed value
//
//	v1:<key id>:<base64url, no padding, of nonce||ciphertext||tag>
//
// aad binds the value to its place (for example
// "ten_1/channel/email-smtp/password"): [Keyring.Open] must be given the same
// aad. aad is authenticated, not encrypted, and not stored. The version and
// key id are authenticated too.
//
// The only error is [ErrNoKey], for a Keyring not made by [NewKeyring].
func (k *Keyring) Seal(plaintext, aad []byte) (string, error) {
	if k == nil || k.currentID == "" {
		return "", ErrNoKey
	}
	header := version + ":" + k.currentID + ":"
	payload := k.byID[k.currentID].Seal(nil, nil, plaintext, additionalData(header, aad))
	return header + payloadEncoding.EncodeToString(payload), nil
}

// Open authenticates and decrypts a value made by [Keyring.Seal] with the
// current or a previous key of k, given the same aad. It returns the
// plaintext, or nil and one of: [ErrMalformed] (not a sealed value),
// [ErrUnknownKey] (wrapped with the key id), [ErrDecrypt] (wrong key, altered
// value or different aad), [ErrNoKey]. It never returns unauthenticated bytes.
func (k *Keyring) Open(sealed string, aad []byte) ([]byte, error) {
	if k == nil || k.currentID == "" {
		return nil, ErrNoKey
	}
	id, payload, err := parse(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := k.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, id)
	}
	plaintext, err := aead.Open(nil, nil, payload, additionalData(sealed[:headerLen], aad))
	if err != nil {
		return nil, ErrDecrypt
	}
	return plaintext, nil
}

// IsSealed reports whether s has the shape of a sealed value: the version,
// a key id and a payload long enough to hold a nonce and a tag. It does not
// say whether any keyring can open s.
func IsSealed(s string) bool {
	_, _, err := parse(s)
	return err == nil
}

// parse splits a sealed value into its key id and decoded payload, or
// returns ErrMalformed.
func parse(s string) (id string, payload []byte, err error) {
	rest, ok := strings.CutPrefix(s, version+":")
	if !ok || len(rest) < idLen+1 || rest[idLen] != ':' {
		return "", nil, ErrMalformed
	}
	id = rest[:idLen]
	if !isLowerHex(id) {
		return "", nil, ErrMalformed
	}
	payload, err = payloadEncoding.DecodeString(rest[idLen+1:])
	if err != nil || len(payload) < minPayload {
		return "", nil, ErrMalformed
	}
	return id, payload, nil
}

func isLowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// additionalData is what GCM authenticates besides the ciphertext: the
// fixed-length header, then the caller's aad. The header has a fixed length,
// so the concatenation is unambiguous.
func additionalData(header string, aad []byte) []byte {
	return append([]byte(header), aad...)
}
