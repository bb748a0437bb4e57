package secrets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// loadOrCreateFile returns the trimmed content of the file at path, or, when
// there is none, writes fresh() followed by a newline to a new file of mode
// 0600 (creating missing parent directories with mode 0700) and returns it
// with created true.
//
// An existing file accessible to group or others is refused with ErrFileMode
// (except on Windows, which has no such mode bits), an empty one with
// ErrEmptyFile. Creation is exclusive: if another process creates the file
// first, its content is read instead, never overwritten.
func loadOrCreateFile(path string, fresh func() string) (content string, created bool, err error) {
	content, err = readPrivateFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return content, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, err
	}
	content = fresh()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		content, err = readPrivateFile(path)
		return content, false, err
	}
	if err != nil {
		return "", false, err
	}
	if err := writeAndSync(f, content+"\n"); err != nil {
		os.Remove(path)
		return "", false, fmt.Errorf("secrets: writing %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return content, true, nil
}

// readPrivateFile reads the file at path, refusing one that group or others
// may access. A missing file is reported with an error matching
// fs.ErrNotExist.
func readPrivateFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if mode := st.Mode().Perm(); mode&0o077 != 0 && runtime.GOOS != "windows" {
		return "", fmt.Errorf("%w: %s has mode %04o, want 0600 (chmod 600 %s)", ErrFileMode, path, mode, path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	content := strings.TrimSpace(string(b))
	if content == "" {
		return "", fmt.Errorf("%w: %s", ErrEmptyFile, path)
	}
	return content, nil
}

// writeAndSync writes s to f, flushes it to stable storage and closes f.
func writeAndSync(f *os.File, s string) error {
	_, err := f.WriteString(s)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// syncDir makes a new directory entry durable where the platform allows it;
// failure only weakens durability after a power loss, so it is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
