// Package links makes and opens the bearer tokens of the public
// preference pages (CONTRACT §12): the unsubscribe link of an email and
// the preference page link, each bound to one (tenant, subscriber,
// workflow).
//
// # Basics
//
// A token is [secrets.Keyring.SealClaims] of the three ids: encrypted and
// authenticated with the service's master key, so it is opaque (it shows
// neither tenant nor subscriber) and any change of a byte makes it fail to
// open. Each link has its own purpose: an unsubscribe token does not open
// the preference page, nor the other way round. Tokens need no storage and
// do not expire; they rotate with the master key: after a rotation, tokens
// sealed by the previous key open as long as the keyring holds it
// (HERALD_MASTER_KEY_PREVIOUS), and stop opening once it is dropped.
//
// # Caveats
//
// A token is a capability: whoever holds the URL may change that
// subscriber's preferences. Tokens are random (a fresh nonce per seal), so
// two links to one page differ.
package links

import (
	"errors"
	"strings"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/secrets"
)

// ErrInvalid is returned by Open for a token that is not one of ours: of
// another purpose, altered, too long, or sealed by a key the keyring no
// longer holds.
var ErrInvalid = errors.New("links: invalid token")

// Purpose names what a token opens.
type Purpose string

// The purposes of tokens, and the path each is served under.
const (
	Unsubscribe Purpose = "unsubscribe" // POST/GET /u/{token}
	Preferences Purpose = "preferences" // GET/POST /p/{token}
)

// MaxTokenChars bounds a token Open reads: the ids it carries are bounded
// (a subscriber id at most 1 KiB, a workflow id 128 characters).
const MaxTokenChars = 4096

// Claims are what a token is bound to.
type Claims struct {
	Tenant     string `json:"t"`
	Subscriber string `json:"s"`
	Workflow   string `json:"w"`
}

// Maker makes and opens tokens and the URLs that carry them. It is safe
// for concurrent use.
type Maker struct {
	keys *secrets.Keyring
	base string
}

// New returns a Maker sealing with keys, whose URLs start with publicURL
// (HERALD_PUBLIC_URL, a trailing slash dropped). With an empty publicURL
// it still opens tokens, but Enabled is false: no link is made.
func New(keys *secrets.Keyring, publicURL string) *Maker {
	return &Maker{keys: keys, base: strings.TrimRight(publicURL, "/")}
}

// Enabled reports whether links are made (a public URL is set).
func (m *Maker) Enabled() bool { return m != nil && m.base != "" }

// URL returns {publicURL}/u/{token} (Unsubscribe) or {publicURL}/p/{token}
// (Preferences) for c.
func (m *Maker) URL(p Purpose, c Claims) (string, error) {
	tok, err := m.keys.SealClaims("", string(p), c)
	if err != nil {
		return "", err
	}
	return m.base + path(p) + tok, nil
}

func path(p Purpose) string {
	if p == Unsubscribe {
		return "/u/"
	}
	return "/p/"
}

// For returns the links of an execute request: the unsubscribe URL (nil
// for a critical workflow) and the preference page URL.
func (m *Maker) For(c Claims, critical bool) (*wire.Links, error) {
	pref, err := m.URL(Preferences, c)
	if err != nil {
		return nil, err
	}
	l := &wire.Links{Preferences: pref}
	if !critical {
		u, err := m.URL(Unsubscribe, c)
		if err != nil {
			return nil, err
		}
		l.Unsubscribe = &u
	}
	return l, nil
}

// Open returns the claims of a token of purpose p, or ErrInvalid.
func (m *Maker) Open(p Purpose, token string) (Claims, error) {
	var c Claims
	if len(token) > MaxTokenChars {
		return Claims{}, ErrInvalid
	}
	if err := m.keys.OpenClaims("", string(p), token, &c); err != nil {
		return Claims{}, ErrInvalid
	}
	if c.Tenant == "" || c.Subscriber == "" || c.Workflow == "" {
		return Claims{}, ErrInvalid
	}
	return c, nil
}
