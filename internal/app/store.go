package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/starter"
)

// Opening what a process runs on: its database (as its own role), the
// secrets keyring, the Temporal client. The command tree calls these and
// never opens the store itself; it acts on it through package ops.

// DB is a database URL and the variable it came from (named in errors).
type DB struct{ URL, From string }

// OwnerDB is the schema owner's database (DATABASE_URL): migrations, roles
// and the operator's write commands.
func OwnerDB(cfg config.Config) DB { return DB{cfg.DatabaseURL, "DATABASE_URL"} }

// IntakeDB is the intake's database (HOOKINBOX_INTAKE_DATABASE_URL, role
// hookinbox_intake), else DATABASE_URL.
func IntakeDB(cfg config.Config) DB {
	return processDB(cfg.IntakeDatabaseURL, cfg.IntakeDB(), "HOOKINBOX_INTAKE_DATABASE_URL")
}

// WorkerDB is the worker's database (HOOKINBOX_WORKER_DATABASE_URL, role
// hookinbox_worker), else DATABASE_URL.
func WorkerDB(cfg config.Config) DB {
	return processDB(cfg.WorkerDatabaseURL, cfg.WorkerDB(), "HOOKINBOX_WORKER_DATABASE_URL")
}

// ConsoleDB is the console's database (HOOKINBOX_CONSOLE_DATABASE_URL,
// role hookinbox_console), else DATABASE_URL.
func ConsoleDB(cfg config.Config) DB {
	return processDB(cfg.ConsoleDatabaseURL, cfg.ConsoleDB(), "HOOKINBOX_CONSOLE_DATABASE_URL")
}

// PayloadDB is the console's payload pool (HOOKINBOX_PAYLOAD_DATABASE_URL,
// role hookinbox_payload_reader), else the console's database.
func PayloadDB(cfg config.Config) DB {
	if cfg.PayloadDatabaseURL == "" {
		return ConsoleDB(cfg)
	}
	return DB{cfg.PayloadDB(), "HOOKINBOX_PAYLOAD_DATABASE_URL"}
}

// OperatorDB is the read-only operator's database
// (HOOKINBOX_OPERATOR_DATABASE_URL, role hookinbox_operator), else
// DATABASE_URL.
func OperatorDB(cfg config.Config) DB {
	return processDB(cfg.OperatorDatabaseURL, cfg.OperatorDB(), "HOOKINBOX_OPERATOR_DATABASE_URL")
}

// OwnRole refuses to start a process (webhook, worker, console) whose own
// database URL (variable, connecting as role) is unset, unless allowOwner
// (--allow-owner): it would run as the schema owner, every handler and
// every flaw of it with the owner's privileges. With allowOwner it says so
// (log may be nil).
func OwnRole(own, variable, role string, allowOwner bool, log *slog.Logger) error {
	if own != "" {
		return nil
	}
	if !allowOwner {
		return fmt.Errorf("%s is not set: give this process its own database role (%s; 'hookinbox db roles' creates it) "+
			"with %s, or pass --allow-owner to run it as the schema owner (DATABASE_URL)", variable, role, variable)
	}
	if log != nil {
		log.Warn("running as the schema owner (DATABASE_URL, --allow-owner): set "+variable+" to connect as "+role, "role", role)
	}
	return nil
}

func processDB(own, resolved, variable string) DB {
	if own == "" {
		return DB{resolved, "DATABASE_URL"}
	}
	return DB{resolved, variable}
}

// OpenStore opens the store on db with the secrets keyring of cfg (none
// when no key is configured: commands that touch no secret still work, and
// those that do fail with secretbox.ErrNoKey's message; a key that does not
// load is an error at once).
func OpenStore(ctx context.Context, cfg config.Config, db DB) (*store.Store, error) {
	kr, err := cli.Keyring(cfg)
	if err != nil && !errors.Is(err, secretbox.ErrNoKey) {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := store.Open(cctx, db.URL, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (%s; for the local stack run 'make run')", err, db.From)
	}
	st.Keys = kr
	return st, nil
}

// CurrentUser is the database role db connects as (`SELECT current_user`):
// what a process's connection string makes it.
func CurrentUser(ctx context.Context, cfg config.Config, db DB) (string, error) {
	st, err := OpenStore(ctx, cfg, db)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var user string
	err = st.Pool.QueryRow(ctx, `SELECT current_user`).Scan(&user)
	return user, err
}

// DialTemporal connects to Temporal, waiting up to a minute for it to come
// up (a worker started beside a booting server).
func DialTemporal(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...starter.Option) (client.Client, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := starter.Dial(dctx, cfg, log, opts...)
		cancel()
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("Temporal not reachable yet; retrying", "address", cfg.TemporalAddress, "error", err.Error())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// Process is what a long-running process holds: its logger, the store, the
// metrics registry and a Temporal client that reports the SDK's metrics on
// that registry.
type Process struct {
	Log      *slog.Logger
	Store    *store.Store
	Metrics  *metrics.Metrics
	Temporal client.Client
}

// OpenProcess opens the store on db and the Temporal client: lazily when
// lazy (the intake must start and accept while Temporal is down), waiting
// for Temporal otherwise.
//
// It refuses to start without a secrets key: the intake could verify no
// sealed secret, the worker open no API key, and neither may keep working
// on plaintext. A secret still kept in a plain column (written before
// secrets were sealed) still works, with a warning until `hookinbox
// migrate` seals it.
func OpenProcess(ctx context.Context, cfg config.Config, db DB, lazy bool) (*Process, error) {
	p := &Process{Log: NewLogger(cfg), Metrics: metrics.New()}
	var err error
	if p.Store, err = OpenStore(ctx, cfg, db); err != nil {
		return nil, err
	}
	if p.Store.Keys == nil {
		p.Store.Close()
		return nil, fmt.Errorf("refusing to start: %w", secretbox.ErrNoKey)
	}
	if n, err := endpoints.PlaintextSecrets(ctx, p.Store); err == nil && n > 0 {
		p.Log.Warn("secrets still stored in plain columns: run 'hookinbox migrate' to seal them", "count", n)
	}
	sdkMetrics, err := starter.PrometheusMetrics(p.Metrics.Registry, p.Log)
	if err == nil {
		if lazy {
			p.Temporal, err = starter.DialLazy(cfg, p.Log, starter.WithMetrics(sdkMetrics))
		} else {
			p.Temporal, err = DialTemporal(ctx, cfg, p.Log, starter.WithMetrics(sdkMetrics))
		}
	}
	if err != nil {
		p.Store.Close()
		return nil, err
	}
	return p, nil
}

// Close closes the Temporal client and the store.
func (p *Process) Close() {
	p.Temporal.Close()
	p.Store.Close()
}
