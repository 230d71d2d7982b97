package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// Without a key the intake and the worker refuse to start, saying how to
// configure one, rather than work on plaintext.
func TestServicesRefuseToStartWithoutASecretsKey(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DatabaseURL = testenv.DatabaseURL(t)
	for _, lazy := range []bool{true, false} {
		p, err := app.OpenProcess(context.Background(), cfg, app.OwnerDB(cfg), lazy)
		require.Nil(t, p)
		require.ErrorIs(t, err, secretbox.ErrNoKey)
		require.ErrorContains(t, err, "refusing to start")
		require.ErrorContains(t, err, "HOOKINBOX_SECRETS_KEY")
	}
	cfg.SecretsKey = "not-a-key"
	_, err := app.OpenProcess(context.Background(), cfg, app.OwnerDB(cfg), true)
	require.ErrorContains(t, err, "HOOKINBOX_SECRETS_KEY: not base64")

	// With a key, the store opens with it (lazily: no Temporal needed).
	cfg.SecretsKey = testenv.SecretsKey()
	p, err := app.OpenProcess(context.Background(), cfg, app.OwnerDB(cfg), true)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	require.NotNil(t, p.Store.Keys)
}

// Each process's database is its own variable when set, else DATABASE_URL,
// and an error names the variable it came from.
func TestEachProcessOpensItsOwnDatabase(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DatabaseURL = "postgres://owner@127.0.0.1:1/hookinbox?connect_timeout=1"
	require.Equal(t, app.DB{URL: cfg.DatabaseURL, From: "DATABASE_URL"}, app.IntakeDB(cfg))
	cfg.WorkerDatabaseURL = "postgres://worker@127.0.0.1:1/hookinbox?connect_timeout=1"
	require.Equal(t, app.DB{URL: cfg.WorkerDatabaseURL, From: "HOOKINBOX_WORKER_DATABASE_URL"}, app.WorkerDB(cfg))
	_, err := app.OpenStore(context.Background(), cfg, app.WorkerDB(cfg))
	require.ErrorContains(t, err, "HOOKINBOX_WORKER_DATABASE_URL")
}
