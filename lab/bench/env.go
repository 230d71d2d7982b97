package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/lab/builtin"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/hookinbox/hookinbox/starter"
)

// EnvOptions say where the benchmarks run.
type EnvOptions struct {
	// DatabaseURL is a superuser URL of an existing PostgreSQL server (the
	// benchmarks create and drop their own databases on it). Empty: start a
	// throw-away cluster.
	DatabaseURL string
	// TemporalAddress of an existing Temporal frontend. Empty: start a
	// throw-away dev server, with the options `make run` uses, when a suite
	// first needs one.
	TemporalAddress string
	// Engine is the Temporal server started when no address is given:
	// devenv.EngineDev (default: the CLI's dev server, SQLite, one history
	// shard) or devenv.EnginePostgres (go.temporal.io/server on this
	// PostgreSQL server, fresh databases per server, 4 history shards: the
	// shape production runs).
	Engine string
	// Ephemeral starts the throw-away cluster with fsync and synchronous
	// commit off (as the tests do). The default keeps PostgreSQL's durable
	// settings, those of the `make run` cluster: an acknowledgement is a
	// flushed commit.
	Ephemeral bool
	// TemporalNice is the niceness of the dev server started here
	// (`make run` gives devenv.DefaultTemporalNice).
	TemporalNice int
	// Progress receives one-line status messages.
	Progress io.Writer
}

// Env is a PostgreSQL server and, on demand, a Temporal server.
type Env struct {
	o        EnvOptions
	admin    *url.URL
	pg       *devenv.Postgres
	tmp      []string
	mu       sync.Mutex
	temporal *devenv.Temporal
	taddr    string
	// dropTemporal drops what the current server leaves (the postgres
	// engine's databases).
	dropTemporal func() error
	seq          atomic.Int64
}

// StartEnv connects to or starts PostgreSQL.
func StartEnv(ctx context.Context, o EnvOptions) (*Env, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch o.Engine {
	case "":
		o.Engine = devenv.EngineDev
	case devenv.EngineDev, devenv.EnginePostgres:
	default:
		return nil, fmt.Errorf("temporal engine %q: want %s or %s", o.Engine, devenv.EngineDev, devenv.EnginePostgres)
	}
	e := &Env{o: o, taddr: o.TemporalAddress}
	if o.DatabaseURL != "" {
		u, err := url.Parse(o.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("database URL: %w", err)
		}
		e.admin = u
		return e, nil
	}
	dir, err := os.MkdirTemp("", "hookinbox-bench-pg-")
	if err != nil {
		return nil, err
	}
	e.tmp = append(e.tmp, dir)
	port, err := devenv.FreePort()
	if err != nil {
		e.Close()
		return nil, err
	}
	mode := "durable: fsync on, synchronous_commit on"
	if o.Ephemeral {
		mode = "ephemeral: fsync off"
	}
	fmt.Fprintf(o.Progress, "bench: starting a throw-away PostgreSQL on 127.0.0.1:%d (%s)\n", port, mode)
	pg, err := devenv.StartPostgres(ctx, devenv.PostgresOptions{Dir: dir, Port: port, Ephemeral: o.Ephemeral})
	if err != nil {
		e.Close()
		return nil, err
	}
	e.pg = pg
	e.admin, _ = url.Parse(pg.AdminURL("postgres"))
	return e, nil
}

// Close stops what StartEnv and Temporal started and removes their files.
func (e *Env) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.temporal != nil {
		_ = e.temporal.Stop()
		e.temporal = nil
	}
	e.dropTemporalDBs()
	if e.pg != nil {
		_ = e.pg.Stop()
		e.pg = nil
	}
	for _, d := range e.tmp {
		_ = os.RemoveAll(d)
	}
	e.tmp = nil
}

// URL is the superuser URL of database db.
func (e *Env) URL(db string) string {
	u := *e.admin
	u.Path = "/" + db
	q := u.Query()
	if q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Database creates a fresh database migrated by the production migrations
// and returns its URL and a function dropping it.
func (e *Env) Database(ctx context.Context, prefix string) (string, func(), error) {
	name := fmt.Sprintf("bench_%s_%d_%d", prefix, os.Getpid(), e.seq.Add(1))
	admin, err := pgx.Connect(ctx, e.URL("postgres"))
	if err != nil {
		return "", nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u := e.URL(name)
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(dctx, e.URL("postgres"))
		if err != nil {
			return
		}
		defer c.Close(dctx)
		_, _ = c.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		drop()
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := migrations.Up(ctx, conn, nil); err != nil {
		drop()
		return "", nil, fmt.Errorf("migrate %s: %w", name, err)
	}
	// The shipped binary's domains' own sets, as its `migrate` applies them.
	for _, set := range builtin.MustBusiness().Migrations {
		if _, err := migrations.UpSet(ctx, conn, set, nil); err != nil {
			drop()
			return "", nil, fmt.Errorf("migrate %s: %s: %w", name, set.Name, err)
		}
	}
	// The effect the cheap benchmark handler commits, one row per event.
	if _, err := conn.Exec(ctx, `CREATE TABLE bench_effects (event_key text PRIMARY KEY, resource text NOT NULL, done_at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
		drop()
		return "", nil, err
	}
	return u, drop, nil
}

// Engine is the Temporal engine this Env starts ("dev" or "postgres"), or
// "given" when a Temporal address was given.
func (e *Env) Engine() string {
	if e.o.TemporalAddress != "" {
		return "given"
	}
	return e.o.Engine
}

// Temporal returns the Temporal address, starting a server on first use
// when none was given: with the dev engine a dev server on a file-backed
// SQLite database with the WAL pragmas and search attributes of `make run`
// (devenv.StartTemporal); with the postgres engine a Temporal server on
// this PostgreSQL server, in two fresh databases, with 4 history shards
// (devenv.StartTemporalPostgres).
func (e *Env) Temporal(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.taddr != "" {
		return e.taddr, nil
	}
	root, err := devenv.FindRoot()
	if err != nil {
		return "", err
	}
	bin, err := devenv.TemporalTool(e.o.Engine).Ensure(ctx, root, e.o.Progress)
	if err != nil {
		return "", err
	}
	port, err := devenv.FreePort()
	if err != nil {
		return "", err
	}
	o := devenv.EngineOptions{Engine: e.o.Engine, Binary: bin, Port: port, Nice: e.o.TemporalNice,
		SearchAttributes: starter.SearchAttributeTypes()}
	if e.o.Engine == devenv.EnginePostgres {
		o.AdminURL, o.Database = e.URL("postgres"), fmt.Sprintf("bench_temporal_%d_%d", os.Getpid(), e.seq.Add(1))
		fmt.Fprintf(e.o.Progress, "bench: starting a throw-away Temporal server on PostgreSQL on 127.0.0.1:%d (%d history shards, databases %s, %s_visibility, niceness %d)\n",
			port, devenv.DefaultTemporalShards, o.Database, o.Database, e.o.TemporalNice)
	} else {
		dir, err := os.MkdirTemp("", "hookinbox-bench-temporal-")
		if err != nil {
			return "", err
		}
		e.tmp = append(e.tmp, dir)
		o.DBFile = filepath.Join(dir, "temporal.db")
		fmt.Fprintf(e.o.Progress, "bench: starting a throw-away Temporal dev server on 127.0.0.1:%d (SQLite file, WAL, niceness %d, as make run)\n", port, e.o.TemporalNice)
	}
	t, drop, err := devenv.StartEngine(ctx, o)
	if err != nil {
		return "", err
	}
	e.dropTemporal = drop
	e.temporal, e.taddr = t, t.Address
	return e.taddr, nil
}

// dropTemporalDBs drops what the stopped server left (the postgres
// engine's databases); the caller holds e.mu.
func (e *Env) dropTemporalDBs() {
	if e.dropTemporal == nil {
		return
	}
	if err := e.dropTemporal(); err != nil {
		fmt.Fprintf(e.o.Progress, "bench: %v\n", err)
	}
	e.dropTemporal = nil
}

// TemporalPID is the process id of the server started here, found by its
// port (0 when the server was given or cannot be found). On the postgres
// engine it is the Temporal process alone: its PostgreSQL work runs in the
// database server's processes.
func (e *Env) TemporalPID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.temporal == nil {
		return 0
	}
	_, port, _ := strings.Cut(e.taddr, ":")
	if e.temporal.Engine() == devenv.EnginePostgres {
		return findProcess("temporal-server\x00start", "--port\x00"+port+"\x00")
	}
	return findProcess("start-dev", "--port\x00"+port+"\x00")
}

// FreshTemporal replaces a server started here by a new, empty one (same
// options; on the postgres engine new databases, the old ones dropped), so
// a run does not inherit the previous run's workflows. A server given by
// address is left alone.
func (e *Env) FreshTemporal(ctx context.Context) error {
	e.mu.Lock()
	if e.o.TemporalAddress != "" {
		e.mu.Unlock()
		return nil
	}
	if e.temporal != nil {
		_ = e.temporal.Stop()
		e.temporal, e.taddr = nil, ""
		e.dropTemporalDBs()
		if n := len(e.tmp); n > 0 && strings.Contains(e.tmp[n-1], "hookinbox-bench-temporal-") {
			_ = os.RemoveAll(e.tmp[n-1])
			e.tmp = e.tmp[:n-1]
		}
	}
	e.mu.Unlock()
	_, err := e.Temporal(ctx)
	return err
}

// PauseTemporal stops the Temporal server started here (SIGSTOP), so that
// it takes no CPU while the intake's own cost is measured: the hand-off's
// calls then wait until their timeout, as they would with the server
// unreachable. resume (SIGCONT) must be called before the server is
// stopped or replaced. A server given by address cannot be paused.
func (e *Env) PauseTemporal() (resume func(), err error) {
	pid := e.TemporalPID()
	if pid <= 0 {
		return nil, errors.New("pause temporal: no Temporal server started here")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pause temporal (pid %d): %w", pid, err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }, nil
}
