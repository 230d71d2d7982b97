package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/starter"
)

func newWebhookCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "webhook",
		Short: "Run the webhook intake (public: POST /webhooks/:endpoint, /healthz; internal: /metrics, /readyz)",
		Long: `Run the webhook intake. Its public port, HOOKINBOX_HTTP_ADDR, serves only POST /webhooks/:endpoint
and a bare /healthz; /metrics and the detailed /readyz are on the internal listener,
HOOKINBOX_INTERNAL_ADDR (default 127.0.0.1:9090), which must not be reachable from outside.
It needs PostgreSQL (HOOKINBOX_INTAKE_DATABASE_URL, role hookinbox_intake; else DATABASE_URL) to
accept anything; Temporal (TEMPORAL_ADDRESS) may be down:
events are still accepted and handed off later.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			svc, err := openService(cmd.Context(), cfg, intakeDB(cfg), true)
			if err != nil {
				return err
			}
			defer svc.Close()
			return app.NewIntake(cfg, svc.st, svc.c, svc.m, svc.log, app.BusinessFrom(cmd.Context()).Routes).Run(cmd.Context(), cfg.HTTPAddr, nil, svc.log)
		},
	}
}

func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (resource workflows, activities, schedules)",
		Long: `Run the Temporal worker on HOOKINBOX_TASK_QUEUE, with /metrics and /healthz on
HOOKINBOX_WORKER_ADDR. At start-up it registers the search attributes and applies the schedules.
Its database is HOOKINBOX_WORKER_DATABASE_URL (role hookinbox_worker), else DATABASE_URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			svc, err := openService(cmd.Context(), cfg, workerDB(cfg), false)
			if err != nil {
				return err
			}
			defer svc.Close()
			acts, err := app.NewActivities(cfg, svc.st, svc.c, svc.m, svc.log, app.BusinessFrom(cmd.Context()))
			if err != nil {
				return err
			}
			return app.RunWorker(cmd.Context(), cfg, svc.c, acts, svc.m, cfg.WorkerAddr, svc.log)
		},
	}
}

// service is what a long-running process holds: its logger, the store, the
// metrics registry and a Temporal client that reports the SDK's metrics on
// that registry.
type service struct {
	log *slog.Logger
	st  *store.Store
	m   *metrics.Metrics
	c   client.Client
}

// openService opens the store on db and the Temporal client: lazily for
// the intake (it must start and accept while Temporal is down), waiting for
// Temporal otherwise.
//
// Both refuse to start without a secrets key: the intake could verify no
// sealed secret, the worker open no API key, and neither may keep working
// on plaintext. A secret still kept in a plain column (written before
// secrets were sealed) still works, with a warning until `hookinbox
// migrate` seals it.
func openService(ctx context.Context, cfg config.Config, db dbURL, lazy bool) (*service, error) {
	s := &service{log: app.NewLogger(cfg), m: metrics.New()}
	var err error
	if s.st, err = openStore(ctx, cfg, db); err != nil {
		return nil, err
	}
	if s.st.Keys == nil {
		s.st.Close()
		return nil, fmt.Errorf("refusing to start: %w", secretbox.ErrNoKey)
	}
	if n, err := endpoints.PlaintextSecrets(ctx, s.st); err == nil && n > 0 {
		s.log.Warn("secrets still stored in plain columns: run 'hookinbox migrate' to seal them", "count", n)
	}
	sdkMetrics, err := starter.PrometheusMetrics(s.m.Registry, s.log)
	if err == nil {
		if lazy {
			s.c, err = starter.DialLazy(cfg, s.log, starter.WithMetrics(sdkMetrics))
		} else {
			s.c, err = dialTemporal(ctx, cfg, s.log, starter.WithMetrics(sdkMetrics))
		}
	}
	if err != nil {
		s.st.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the client and the store.
func (s *service) Close() {
	s.c.Close()
	s.st.Close()
}

// dbURL is a database URL and the variable it came from (for errors).
type dbURL struct{ url, from string }

// ownerDB is the schema owner's URL: migrations, roles and the operator's
// write commands.
func ownerDB(cfg config.Config) dbURL { return dbURL{cfg.DatabaseURL, "DATABASE_URL"} }

// intakeDB, workerDB and operatorDB are each process's URL, falling back to
// DATABASE_URL.
func intakeDB(cfg config.Config) dbURL {
	return processDB(cfg.IntakeDatabaseURL, cfg.IntakeDB(), "HOOKINBOX_INTAKE_DATABASE_URL")
}

func workerDB(cfg config.Config) dbURL {
	return processDB(cfg.WorkerDatabaseURL, cfg.WorkerDB(), "HOOKINBOX_WORKER_DATABASE_URL")
}

func operatorDB(cfg config.Config) dbURL {
	return processDB(cfg.OperatorDatabaseURL, cfg.OperatorDB(), "HOOKINBOX_OPERATOR_DATABASE_URL")
}

func processDB(own, resolved, variable string) dbURL {
	if own == "" {
		return dbURL{resolved, "DATABASE_URL"}
	}
	return dbURL{resolved, variable}
}

// openStore opens the store on db with the secrets keyring of cfg (none
// when no key is configured: commands that touch no secret still work, and
// those that do fail with secretbox.ErrNoKey's message; a key that does not
// load is an error at once).
func openStore(ctx context.Context, cfg config.Config, db dbURL) (*store.Store, error) {
	kr, err := cli.Keyring(cfg)
	if err != nil && !errors.Is(err, secretbox.ErrNoKey) {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := store.Open(cctx, db.url, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (%s; for the local stack run 'make run')", err, db.from)
	}
	st.Keys = kr
	return st, nil
}
