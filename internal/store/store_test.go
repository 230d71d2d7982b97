package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestParsePoolConfigDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		url       string
		maxConns  int32
		statement string
		options   string
		connect   time.Duration
	}{
		{"defaults", "postgres://u@127.0.0.1:5432/db", store.DefaultMaxConns, "30000", "", store.DefaultConnectTimeout},
		{"url says", "postgres://u@127.0.0.1:5432/db?pool_max_conns=3&statement_timeout=1500&connect_timeout=2", 3, "1500", "", 2 * time.Second},
		{"options says", "postgres://u@127.0.0.1:5432/db?options=-c%20statement_timeout%3D0", store.DefaultMaxConns, "", "-c statement_timeout=0", store.DefaultConnectTimeout},
	}
	for _, tt := range tests {
		cfg, err := store.ParsePoolConfig(tt.url)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.maxConns, cfg.MaxConns, tt.name)
		require.Equal(t, tt.statement, cfg.ConnConfig.RuntimeParams["statement_timeout"], tt.name)
		require.Equal(t, tt.options, cfg.ConnConfig.RuntimeParams["options"], tt.name)
		require.Equal(t, tt.connect, cfg.ConnConfig.ConnectTimeout, tt.name)
		require.NotNil(t, cfg.ConnConfig.DialFunc, tt.name)
	}
}

// A statement that would hold a connection forever is cut by the server at
// statement_timeout: the default applies when the URL does not say, and the
// URL's value wins when it does.
func TestStatementTimeoutCutsARunawayStatement(t *testing.T) {
	t.Parallel()
	url := testenv.DatabaseURL(t)
	ctx := context.Background()

	s, err := store.Open(ctx, url, 0)
	require.NoError(t, err)
	defer s.Close()
	var shown string
	require.NoError(t, s.Pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&shown))
	require.Equal(t, "30s", shown)
	require.EqualValues(t, store.DefaultMaxConns, s.Pool.Config().MaxConns)

	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	short, err := store.Open(ctx, url+sep+"statement_timeout=200", 0)
	require.NoError(t, err)
	defer short.Close()
	start := time.Now()
	_, err = short.Pool.Exec(ctx, `SELECT pg_sleep(30)`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "57014", pgErr.Code, "query_canceled by statement_timeout")
	require.Less(t, time.Since(start), 10*time.Second)
}
