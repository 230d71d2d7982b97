package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/metrics"
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
			ctx := cmd.Context()
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			log := app.NewLogger(cfg)
			st, err := openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			m := metrics.New()
			sdkMetrics, err := starter.PrometheusMetrics(m.Registry, log)
			if err != nil {
				return err
			}
			c, err := starter.DialLazy(cfg, log, starter.WithMetrics(sdkMetrics))
			if err != nil {
				return err
			}
			defer c.Close()
			return app.NewIntake(cfg, st, c, m, log).Run(ctx, cfg.HTTPAddr, nil, log)
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
			ctx := cmd.Context()
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			log := app.NewLogger(cfg)
			st, err := openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			m := metrics.New()
			sdkMetrics, err := starter.PrometheusMetrics(m.Registry, log)
			if err != nil {
				return err
			}
			c, err := dialTemporal(ctx, cfg, log, starter.WithMetrics(sdkMetrics))
			if err != nil {
				return err
			}
			defer c.Close()
			acts, err := app.NewActivities(cfg, st, c, m, log)
			if err != nil {
				return err
			}
			return app.RunWorker(ctx, cfg, c, acts, m, cfg.WorkerAddr, log)
		},
	}
}

func openStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	st, err := store.Open(cctx, cfg.DatabaseURL, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (DATABASE_URL; for the local stack run 'make run')", err)
	}
	return st, nil
}
