package inbound

import (
	"errors"
	"strings"

	"github.com/heraldhq/herald/secrets"
)

// ErrInvalidToken is returned by Tokens.Open for a token that is not one
// of ours: altered, too long, of another purpose, or sealed by a key the
// keyring no longer holds.
var ErrInvalidToken = errors.New("inbound: invalid token")

// tokenPurpose keeps an inbound token from opening anything else (and
// the other way round).
const tokenPurpose = "inbound"

// MaxTokenChars bounds a token Open reads.
const MaxTokenChars = 1024

// Claims are what an inbound token is bound to: the tenant, the channel,
// the sequence of the event that created the channel (a channel deleted
// and created again does not answer the old URL) and its inbound
// generation (a rotation retires the URLs shown before).
type Claims struct {
	Tenant     string `json:"t"`
	ChannelKey string `json:"c"`
	Seq        uint64 `json:"s"`
	Generation string `json:"g,omitempty"`
}

// Tokens makes and opens inbound tokens and their URLs. It is safe for
// concurrent use.
type Tokens struct {
	keys *secrets.Keyring
	base string
}

// NewTokens returns Tokens sealing with keys, whose URLs start with
// publicURL (HERALD_PUBLIC_URL, a trailing slash dropped). With an empty
// publicURL it still opens tokens, but Enabled is false.
func NewTokens(keys *secrets.Keyring, publicURL string) *Tokens {
	return &Tokens{keys: keys, base: strings.TrimRight(publicURL, "/")}
}

// Enabled reports whether URLs are made (a public URL is set).
func (t *Tokens) Enabled() bool { return t != nil && t.base != "" }

// Base is the public URL.
func (t *Tokens) Base() string { return t.base }

// URL returns {public}/in/{token} for c. Each call seals anew: two URLs
// of one channel differ, and both open until the channel is rotated.
func (t *Tokens) URL(c Claims) (string, error) {
	tok, err := t.keys.SealClaims("", tokenPurpose, c)
	if err != nil {
		return "", err
	}
	return t.base + "/in/" + tok, nil
}

// Open returns the claims of a token, or ErrInvalidToken.
func (t *Tokens) Open(token string) (Claims, error) {
	var c Claims
	if t == nil || len(token) > MaxTokenChars {
		return Claims{}, ErrInvalidToken
	}
	if err := t.keys.OpenClaims("", tokenPurpose, token, &c); err != nil || c.Tenant == "" || c.ChannelKey == "" {
		return Claims{}, ErrInvalidToken
	}
	return c, nil
}
