package devenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// SecretsKeyFile is the local stack's secrets key file, .data/secrets.key
// (a HOOKINBOX_SECRETS_KEY_FILE of one line).
func SecretsKeyFile(root string) string { return filepath.Join(DataDir(root), "secrets.key") }

// EnsureSecretsKey creates the local stack's key file with one new key
// (mode 0600) unless it exists, and reports whether it created it. An
// existing file is never rewritten: the secrets sealed under it would be
// lost.
func EnsureSecretsKey(root string) (path string, created bool, err error) {
	path = SecretsKeyFile(root)
	if err := mkdirAll(filepath.Dir(path)); err != nil {
		return "", false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return path, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("create %s: %w", path, err)
	}
	line := "# hookinbox local stack secrets key (HOOKINBOX_SECRETS_KEY_FILE): keep it, the database's secrets are sealed with it\n" +
		secretbox.GenerateKeyLine("local-1") + "\n"
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		os.Remove(path)
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	return path, true, nil
}
