package command

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// `make run` binds every hookinbox listener to loopback on the usual ports
// (the intake's public port included: the local stack is not a server),
// unless the environment names another address.
func TestLocalStackConfigListensOnLoopback(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, err := localConfig(env(map[string]string{"DATABASE_URL": "postgres://elsewhere/db", "TEMPORAL_ADDRESS": "10.0.0.1:7233"}))
	require.NoError(t, err)
	for name, tt := range map[string]struct{ addr, port string }{
		"HOOKINBOX_HTTP_ADDR":     {cfg.HTTPAddr, "8080"},
		"HOOKINBOX_INTERNAL_ADDR": {cfg.InternalAddr, "9090"},
		"HOOKINBOX_WORKER_ADDR":   {cfg.WorkerAddr, "9091"},
	} {
		host, port, err := net.SplitHostPort(tt.addr)
		require.NoError(t, err, name)
		require.Equal(t, "127.0.0.1", host, "%s binds %q under make run", name, tt.addr)
		require.Equal(t, tt.port, port, name)
	}
	require.Contains(t, cfg.DatabaseURL, "@127.0.0.1:55432/", "the local stack's own database")
	require.Equal(t, "127.0.0.1:7233", cfg.TemporalAddress)

	cfg, err = localConfig(env(map[string]string{"HOOKINBOX_HTTP_ADDR": "0.0.0.0:8081"}))
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:8081", cfg.HTTPAddr, "an explicit address is the user's choice")
}

// `make run` gives the console its own role, and its payload pool the
// payload reader's, on the local cluster (trust on loopback: no password),
// as it does the intake and the worker.
func TestLocalStackConsoleConnectsAsItsOwnRole(t *testing.T) {
	t.Parallel()
	pg, dbURL := testenv.NewPostgres(t)
	cfg := config.Default()
	cfg.DatabaseURL = dbURL
	cfg.SecretsKey = testenv.SecretsKey()
	localRoles(&cfg, pg)
	ctx := context.Background()
	for _, tt := range []struct {
		db   app.DB
		want string
	}{
		{app.ConsoleDB(cfg), ops.RoleConsole},
		{app.PayloadDB(cfg), ops.RolePayloadReader},
		{app.IntakeDB(cfg), ops.RoleIntake},
		{app.WorkerDB(cfg), ops.RoleWorker},
	} {
		user, err := app.CurrentUser(ctx, cfg, tt.db)
		require.NoError(t, err, tt.db.From)
		require.Equal(t, tt.want, user, tt.db.From)
	}
}
