/*
Package secrets seals secrets at rest (channel passwords, Bridge signing
secrets) with AES-256-GCM, and loads the keys and generated tokens of a
Herald process. It imports nothing but the standard library.

# Basics

A [Keyring] holds one current key and any number of previous ones. Seal
encrypts with the current key and returns a printable string that names the
key by a one-way id:

	v1:<8 hex of HMAC-SHA256(key, "herald-key-id")>:<base64url(nonce||ciphertext||tag)>

Open reads the id, picks that key and authenticates before it returns a
byte: a wrong key, an altered value or a different additional data (aad) is
[ErrDecrypt], an id the keyring does not hold is [ErrUnknownKey], a string
that is not a sealed value is [ErrMalformed]. The aad binds a value to its
place, for example "ten_1/channel/email-smtp/password", so a sealed value
copied to another tenant or field does not open there.

	kr, info, err := secrets.LoadKeyring(os.Getenv, dataDir, natsURL == "")
	sealed, err := kr.Seal([]byte(password), []byte("ten_1/channel/email-smtp/password"))
	password, err := kr.Open(sealed, []byte("ten_1/channel/email-smtp/password"))

# Keys

[LoadKeyring] takes the current key from HERALD_MASTER_KEY (base64 of 32
bytes; generate one with `openssl rand -base64 32`). Without it, in embedded
mode, the key lives in DATA_DIR/master.key, generated with mode 0600 on the
first start ([Info].Generated tells the caller to warn); with an external NATS
cluster HERALD_MASTER_KEY is required.

# Rotation

HERALD_MASTER_KEY_PREVIOUS lists, comma separated, keys that were current
before. To rotate: set HERALD_MASTER_KEY to a new key and add the old one
(the content of master.key if the key was generated) to
HERALD_MASTER_KEY_PREVIOUS. New values are sealed with the new key; values
sealed with an old key keep opening while that key is listed, and move to the
new key whenever they are written again. Drop an old key only once nothing
sealed with it remains; until then Open answers [ErrUnknownKey] naming its id.

# Tokens

[NewToken] draws base62 tokens from crypto/rand without modulo bias (API keys,
signing secrets, the admin and internal tokens); [LoadOrCreateTokenFile]
keeps one in a 0600 file under the data directory.

# Caveats

Key ids are 32 bits: two keys of one keyring with the same id are refused by
[NewKeyring], so generate another key in that (unlikely) case. Existing key
and token files readable or writable by group or others are refused with
[ErrFileMode] rather than used. Nonces are random (96 bits), so one key
should seal well under 2^32 values; rotate long before that.
*/
package secrets
