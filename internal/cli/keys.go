package cli

import (
	"errors"
	"io/fs"
	"os"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/lab/devenv"
)

// Keyring loads the keyring that seals the database's secrets:
// HOOKINBOX_SECRETS_KEY or HOOKINBOX_SECRETS_KEY_FILE. With neither set and
// DATABASE_URL left at the local stack's default, it is the key file that
// `make run` keeps in .data/secrets.key, when there is one, so operator
// commands against the local stack need no setup (as every other default
// points at the local stack). Otherwise secretbox.ErrNoKey.
func Keyring(cfg config.Config) (*secretbox.Keyring, error) {
	if cfg.SecretsKey != "" || cfg.SecretsKeyFile != "" {
		return secretbox.Load(cfg.SecretsKey, cfg.SecretsKeyFile)
	}
	if cfg.DatabaseURL != config.Default().DatabaseURL {
		return nil, secretbox.ErrNoKey
	}
	root, err := devenv.ProjectDir()
	if err != nil {
		return nil, secretbox.ErrNoKey
	}
	path := devenv.SecretsKeyFile(root)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, secretbox.ErrNoKey
	}
	return secretbox.Load("", path)
}
