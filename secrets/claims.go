package secrets

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SealClaims returns an opaque, URL-safe bearer token that carries claims
// (any JSON-encodable value): prefix, then the value [Keyring.Seal] makes
// of the claims' JSON bound to purpose, with its ':' separators written as
// '.'. The claims are encrypted, not only signed: a token reveals nothing
// of the tenant or subscriber it names.
//
// purpose keeps tokens of one use from being accepted for another (an
// unsubscribe link is not an inbox token). Tokens rotate with the
// keyring: [Keyring.OpenClaims] opens those sealed by a previous key as
// long as the keyring holds it.
func (k *Keyring) SealClaims(prefix, purpose string, claims any) (string, error) {
	data, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("secrets: claims: %w", err)
	}
	sealed, err := k.Seal(data, claimsAAD(purpose))
	if err != nil {
		return "", err
	}
	return prefix + strings.ReplaceAll(sealed, ":", "."), nil
}

// OpenClaims authenticates a token made by [Keyring.SealClaims] with the
// same prefix and purpose and decodes its claims into into. A token of
// another prefix or purpose, altered in any byte, or sealed by a key the
// keyring does not hold is an error wrapping [ErrMalformed],
// [ErrDecrypt] or [ErrUnknownKey]; into is then left untouched.
func (k *Keyring) OpenClaims(prefix, purpose, token string, into any) error {
	rest, ok := strings.CutPrefix(token, prefix)
	// A sealed value has exactly two ':' and the base64url payload none,
	// so every '.' maps back; a ':' in the token is not one we made.
	if !ok || strings.Contains(rest, ":") {
		return ErrMalformed
	}
	data, err := k.Open(strings.ReplaceAll(rest, ".", ":"), claimsAAD(purpose))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%w: claims: %v", ErrMalformed, err)
	}
	return nil
}

func claimsAAD(purpose string) []byte { return []byte("herald-token/" + purpose) }
