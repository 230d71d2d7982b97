package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// TemporalPostgresOptions describe a Temporal server in the shape production
// runs it: go.temporal.io/server (tools/temporal-server) on PostgreSQL, with
// its default and visibility stores in two databases of their own and
// several history shards, all services in one process on loopback.
type TemporalPostgresOptions struct {
	// Binary is tools/temporal-server (TemporalServer.Ensure builds it).
	Binary string
	// Port of the gRPC frontend.
	Port int
	// PostgresAddr is host:port of the PostgreSQL server; User (and
	// Password) a role that may create databases: the server creates
	// Database and VisibilityDatabase if missing and sets up or updates
	// their schemas at every start.
	PostgresAddr, User, Password string
	Database, VisibilityDatabase string
	// Shards is the number of history shards (0: 4). It is fixed for the
	// life of the databases.
	Shards int
	// MaxConns is the pool size per store and service (0: the server's 10).
	MaxConns int
	// SearchAttributes to register at start: name → type (Keyword, Int, …).
	SearchAttributes map[string]string
	// Nice is the server's CPU niceness (0: the caller's; see
	// DefaultTemporalNice).
	Nice int
	// Log receives the server's output; Progress one-line status messages.
	Log      io.Writer
	Progress io.Writer
}

// DefaultTemporalShards is the history shard count of the postgres engine:
// more than one, so workflows spread over shards as in production.
const DefaultTemporalShards = 4

// StartTemporalPostgres starts a Temporal server on PostgreSQL, or reuses
// whatever already listens on the port. The result behaves as a dev server's
// (Address, Stop, Kill, Restart: the databases keep the workflows), so
// callers need not know which engine runs.
func StartTemporalPostgres(ctx context.Context, o TemporalPostgresOptions) (*Temporal, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Shards == 0 {
		o.Shards = DefaultTemporalShards
	}
	t := &Temporal{Address: "127.0.0.1:" + strconv.Itoa(o.Port), pg: &o}
	if listening(t.Address) {
		fmt.Fprintf(o.Progress, "temporal: reusing the server already on %s\n", t.Address)
		return t, nil
	}
	return t, t.start(ctx)
}

// Engine names the server: "dev" (the CLI's dev server, SQLite, one shard)
// or "postgres" (go.temporal.io/server on PostgreSQL, several shards).
func (t *Temporal) Engine() string {
	if t.pg != nil {
		return EnginePostgres
	}
	return EngineDev
}

// The two Temporal engines of the tests and benchmarks.
const (
	EngineDev      = "dev"
	EnginePostgres = "postgres"
)

func (t *Temporal) startPostgres(ctx context.Context) error {
	o := t.pg
	dir, err := os.MkdirTemp("", "hookinbox-temporal-server-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ready := filepath.Join(dir, "ready")
	args := []string{"start", "--ip", "127.0.0.1", "--port", strconv.Itoa(o.Port),
		"--pg", o.PostgresAddr, "--user", o.User, "--db", o.Database, "--visibility-db", o.VisibilityDatabase,
		"--shards", strconv.Itoa(o.Shards), "--namespace", "default", "--log-level", "warn",
		"--ready-file", ready,
		// As the dev server gets it (StartTemporal).
		"--dynamic-config-value", "system.enableActivityEagerExecution=true",
	}
	if o.Password != "" {
		args = append(args, "--password", o.Password)
	}
	if o.MaxConns > 0 {
		args = append(args, "--max-conns", strconv.Itoa(o.MaxConns))
	}
	args = append(args, searchAttributeArgs(o.SearchAttributes)...)
	// Run as the caller, as the dev server is: it binds loopback only and
	// needs no privilege (PostgreSQL runs as its own user, StartPostgres).
	p, err := startProc("temporal-server", niced(o.Nice, o.Binary, args), o.Log, nil)
	if err != nil {
		return err
	}
	// The frontend listens before the namespace and search attributes are
	// registered; the ready file says both are.
	if err := waitUntil(ctx, p, 3*time.Minute, "ready", func() bool { _, err := os.Stat(ready); return err == nil }); err != nil {
		p.kill()
		return fmt.Errorf("temporal server on %s (its log has the reason): %w", t.Address, err)
	}
	t.started = p
	fmt.Fprintf(o.Progress, "temporal: server on PostgreSQL started on %s (%d history shards, databases %s and %s on %s)\n",
		t.Address, o.Shards, o.Database, o.VisibilityDatabase, o.PostgresAddr)
	return nil
}

// DropDatabases drops the named databases (closing their sessions) through
// adminURL, a superuser's: the throw-away databases of a postgres engine
// once its server is stopped.
func DropDatabases(ctx context.Context, adminURL string, names ...string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, n := range names {
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", n, err)
		}
	}
	return nil
}
