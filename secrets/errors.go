package secrets

import "errors"

var (
	// ErrDecrypt is returned by [Keyring.Open] when the key named by a sealed
	// value does not authenticate it: the value was sealed under another key
	// with the same id, a byte of it was changed, or the additional data
	// differs from the one it was sealed with. Nothing is returned with it.
	ErrDecrypt = errors.New("secrets: cannot decrypt sealed value")

	// ErrUnknownKey is returned by [Keyring.Open] when the sealed value names
	// a key id that is neither the current nor a previous key of the
	// keyring. It is wrapped with the id, which is safe to log.
	ErrUnknownKey = errors.New("secrets: sealed with an unknown key")

	// ErrMalformed is returned by [Keyring.Open] when the input is not a
	// sealed value of a known version (see [IsSealed]).
	ErrMalformed = errors.New("secrets: malformed sealed value")

	// ErrNoKey is returned by [Keyring.Seal] and [Keyring.Open] on a nil or
	// zero Keyring: a Keyring must come from [NewKeyring] or [LoadKeyring].
	ErrNoKey = errors.New("secrets: keyring has no key")

	// ErrInvalidKey is returned (wrapped with the reason, never with key
	// material) by [ParseKey], [NewKeyring] and the loaders when a key is not
	// base64 of exactly [KeySize] bytes, or when two different keys share an
	// id.
	ErrInvalidKey = errors.New("secrets: invalid key")

	// ErrMasterKeyRequired is returned by [LoadKeyring] when no
	// HERALD_MASTER_KEY is set outside embedded mode: with an external NATS
	// cluster several processes must share one key, so none may invent it.
	ErrMasterKeyRequired = errors.New("secrets: HERALD_MASTER_KEY is required with an external NATS cluster (HERALD_NATS_URL)")

	// ErrFileMode is returned by [LoadOrCreateKeyFile] and
	// [LoadOrCreateTokenFile] when an existing file is readable or writable
	// by its group or by others. It is wrapped with the path and the mode.
	ErrFileMode = errors.New("secrets: file is accessible to group or others")

	// ErrEmptyFile is returned by the file loaders when an existing key or
	// token file holds nothing but white space.
	ErrEmptyFile = errors.New("secrets: file is empty")

	// ErrTokenLength is returned by [NewToken] and [LoadOrCreateTokenFile]
	// when the requested number of random characters is below 1.
	ErrTokenLength = errors.New("secrets: token length must be at least 1")
)
