package devenv

import (
	"fmt"
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
	created, err = secretbox.CreateKeyFile(path, "local-1")
	if err != nil {
		return "", false, fmt.Errorf("create %s: %w", path, err)
	}
	return path, created, nil
}
