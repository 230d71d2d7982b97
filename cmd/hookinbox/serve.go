package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/app"
	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/starter"
)

func newWebhookCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "webhook",
		Short: "Run the webhook intake (POST /webhooks/:endpoint, /healthz, /readyz, /metrics)",
		Long: `Run the webhook intake on HOOKINBOX_HTTP_ADDR. It needs PostgreSQL (DATABASE_URL) to accept
anything; Temporal (TEMPORAL_ADDRESS) may be down: events are still accepted and handed off later.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			svc, err := openService(cmd.Context(), cfg, true)
			if err != nil {
				return err
			}
			defer svc.Close()
			return app.NewIntake(cfg, svc.st, svc.c, svc.m, svc.log).Run(cmd.Context(), cfg.HTTPAddr, nil, svc.log)
		},
	}
}

func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (resource workflows, activities, schedules)",
		Long: `Run the Temporal worker on HOOKINBOX_TASK_QUEUE, with /metrics and /healthz on
HOOKINBOX_WORKER_ADDR. At start-up it registers the search attributes and applies the schedules.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			svc, err := openService(cmd.Context(), cfg, false)
			if err != nil {
				return err
			}
			defer svc.Close()
			acts, err := app.NewActivities(cfg, svc.st, svc.c, svc.m, svc.log)
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

// openService opens the store and the Temporal client: lazily for the
// intake (it must start and accept while Temporal is down), waiting for
// Temporal otherwise.
//
// Both refuse to start without a secrets key: the intake could verify no
// sealed secret, the worker open no API key, and neither may keep working
// on plaintext. A secret still kept in a plain column (written before
// secrets were sealed) still works, with a warning until `hookinbox
// migrate` seals it.
func openService(ctx context.Context, cfg config.Config, lazy bool) (*service, error) {
	s := &service{log: app.NewLogger(cfg), m: metrics.New()}
	var err error
	if s.st, err = openStore(ctx, cfg); err != nil {
		return nil, err
	}
	if s.st.Keys == nil {
		s.st.Close()
		return nil, fmt.Errorf("refusing to start: %w", secretbox.ErrNoKey)
	}
	if n, err := s.st.PlaintextSecrets(ctx); err == nil && n > 0 {
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

// openStore opens the store with the secrets keyring of cfg (none when no
// key is configured: commands that touch no secret still work, and those
// that do fail with secretbox.ErrNoKey's message; a key that does not load
// is an error at once).
func openStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	kr, err := cli.Keyring(cfg)
	if err != nil && !errors.Is(err, secretbox.ErrNoKey) {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := store.Open(cctx, cfg.DatabaseURL, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (DATABASE_URL; for the local stack run 'make run')", err)
	}
	st.Keys = kr
	return st, nil
}
