package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
)

// Environment variables and file name read by [LoadKeyring].
const (
	// EnvMasterKey holds the current master key: base64 (standard or URL
	// alphabet, padded or not) of [KeySize] bytes.
	EnvMasterKey = "HERALD_MASTER_KEY"
	// EnvPreviousKeys holds the keys that were current before, comma
	// separated, in the same encoding: values sealed with them still open.
	EnvPreviousKeys = "HERALD_MASTER_KEY_PREVIOUS"
	// MasterKeyFile is the file under the data directory that holds the
	// generated master key in embedded mode.
	MasterKeyFile = "master.key"
)

// ParseKey decodes a key from base64 in the standard or URL alphabet, with or
// without padding, ignoring surrounding white space. Anything else, or a
// length other than [KeySize] bytes, is [ErrInvalidKey] with the reason. The
// error never contains the input.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("%w: decodes to %d bytes, want %d", ErrInvalidKey, len(key), KeySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%w: not base64", ErrInvalidKey)
}

// LoadOrCreateKeyFile returns the key stored base64 in the file at path. When
// the file does not exist it generates a random key, writes it (standard
// base64 and a newline) to a new file of mode 0600, and reports created.
// Missing parent directories are created with mode 0700.
//
// An existing file readable or writable by group or others is refused with
// [ErrFileMode]: the key may have leaked, and the fix (chmod 600) is the
// operator's decision. A file that does not hold a valid key is
// [ErrInvalidKey], an empty one [ErrEmptyFile]. An existing file is never
// overwritten.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	content, created, err := loadOrCreateFile(path, func() string {
		key := make([]byte, KeySize)
		rand.Read(key) // never fails: crypto/rand aborts the program instead
		return base64.StdEncoding.EncodeToString(key)
	})
	if err != nil {
		return nil, false, err
	}
	key, err = ParseKey(content)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return key, created, nil
}

// KeySource says where the current key of a [LoadKeyring] keyring came from.
type KeySource string

const (
	// SourceEnv: the key is the value of HERALD_MASTER_KEY.
	SourceEnv KeySource = "env"
	// SourceFile: the key is in DATA_DIR/master.key (embedded mode only).
	SourceFile KeySource = "file"
)

// Info describes the keyring [LoadKeyring] built, for the caller to log.
// Nothing in it is secret.
type Info struct {
	// Source says where the current key came from.
	Source KeySource
	// Path is the key file when Source is SourceFile, otherwise "".
	Path string
	// Generated is true when the key file did not exist and a new key was
	// just written to Path. The caller should warn: whoever loses that file
	// loses every secret sealed with it, and other processes cannot share it.
	Generated bool
	// KeyID is the id of the current key.
	KeyID string
	// PreviousKeyIDs are the ids of the keys of HERALD_MASTER_KEY_PREVIOUS,
	// in order; nil when it is unset.
	PreviousKeyIDs []string
}

// LoadKeyring builds the keyring of a Herald process from its environment
// (env is usually os.Getenv):
//
//   - The current key is HERALD_MASTER_KEY when it is set (see [ParseKey]).
//   - Otherwise, in embedded mode, it is the key in dataDir/master.key, which
//     is generated (mode 0600) when missing; Info.Generated reports that, so
//     the caller can log a warning.
//   - Otherwise (an external NATS cluster) the result is
//     [ErrMasterKeyRequired]: processes sharing a cluster must share a key.
//
// HERALD_MASTER_KEY_PREVIOUS lists, comma separated, keys that were current
// before: values sealed with them still open, new values are sealed with the
// current key. To rotate, put the new key in HERALD_MASTER_KEY and the old
// one (the content of master.key, if that is where it was) in
// HERALD_MASTER_KEY_PREVIOUS.
//
// Errors name the variable or file at fault and wrap [ErrInvalidKey],
// [ErrFileMode], [ErrEmptyFile] or an I/O error; they never contain a key.
func LoadKeyring(env func(string) string, dataDir string, embedded bool) (*Keyring, Info, error) {
	var (
		info    Info
		current []byte
		err     error
	)
	switch value := env(EnvMasterKey); {
	case strings.TrimSpace(value) != "":
		info.Source = SourceEnv
		if current, err = ParseKey(value); err != nil {
			return nil, Info{}, fmt.Errorf("%s: %w", EnvMasterKey, err)
		}
	case embedded:
		info.Source, info.Path = SourceFile, filepath.Join(dataDir, MasterKeyFile)
		if current, info.Generated, err = LoadOrCreateKeyFile(info.Path); err != nil {
			return nil, Info{}, err
		}
	default:
		return nil, Info{}, ErrMasterKeyRequired
	}

	var previous [][]byte
	for i, value := range strings.Split(env(EnvPreviousKeys), ",") {
		if strings.TrimSpace(value) == "" {
			continue
		}
		key, err := ParseKey(value)
		if err != nil {
			return nil, Info{}, fmt.Errorf("%s, item %d: %w", EnvPreviousKeys, i+1, err)
		}
		previous = append(previous, key)
		info.PreviousKeyIDs = append(info.PreviousKeyIDs, KeyID(key))
	}

	k, err := NewKeyring(current, previous...)
	if err != nil {
		return nil, Info{}, err
	}
	info.KeyID = k.KeyID()
	return k, info, nil
}
