package command

import (
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// allowOwnerFlag is --allow-owner: run a process as the schema owner when
// its own database URL is unset (refused otherwise).
func allowOwnerFlag(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("allow-owner", false, "run as the schema owner (DATABASE_URL) when this process's own database URL is unset "+
		"(refused otherwise: give it its own role)")
}

func newWebhookCmd() *cobra.Command {
	var allowOwner *bool
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Run the webhook intake (public: POST /webhooks/:endpoint, /healthz; internal: /metrics, /readyz)",
		Long: `Run the webhook intake. Its public port, HOOKINBOX_HTTP_ADDR, serves only POST /webhooks/:endpoint
and a bare /healthz; /metrics and the detailed /readyz are on the internal listener,
HOOKINBOX_INTERNAL_ADDR (default 127.0.0.1:9090), which must not be reachable from outside.
It needs PostgreSQL (HOOKINBOX_INTAKE_DATABASE_URL, role hookinbox_intake; without it the intake
refuses to start, unless --allow-owner runs it as DATABASE_URL's schema owner) to accept anything; Temporal (TEMPORAL_ADDRESS) may be down:
events are still accepted and handed off later.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			if err := app.OwnRole(cfg.IntakeDatabaseURL, "HOOKINBOX_INTAKE_DATABASE_URL", ops.RoleIntake, *allowOwner, nil); err != nil {
				return err
			}
			p, err := app.OpenProcess(cmd.Context(), cfg, app.IntakeDB(cfg), true)
			if err != nil {
				return err
			}
			defer p.Close()
			_ = app.OwnRole(cfg.IntakeDatabaseURL, "HOOKINBOX_INTAKE_DATABASE_URL", ops.RoleIntake, *allowOwner, p.Log)
			return app.NewIntake(cfg, p.Store, p.Temporal, p.Metrics, p.Log, app.BusinessFrom(cmd.Context()).Router(cfg, p.Store, p.Log)).Run(cmd.Context(), cfg.HTTPAddr, nil, p.Log)
		},
	}
	allowOwner = allowOwnerFlag(cmd)
	return cmd
}

func newWorkerCmd() *cobra.Command {
	var allowOwner *bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker (resource workflows, activities, schedules)",
		Long: `Run the Temporal worker on HOOKINBOX_TASK_QUEUE, with /metrics and /healthz on
HOOKINBOX_WORKER_ADDR. At start-up it registers the search attributes and applies the schedules.
Its database is HOOKINBOX_WORKER_DATABASE_URL (role hookinbox_worker); without it the worker refuses
to start, unless --allow-owner runs it (and every handler) as DATABASE_URL's schema owner.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			if err := app.OwnRole(cfg.WorkerDatabaseURL, "HOOKINBOX_WORKER_DATABASE_URL", ops.RoleWorker, *allowOwner, nil); err != nil {
				return err
			}
			p, err := app.OpenProcess(cmd.Context(), cfg, app.WorkerDB(cfg), false)
			if err != nil {
				return err
			}
			defer p.Close()
			_ = app.OwnRole(cfg.WorkerDatabaseURL, "HOOKINBOX_WORKER_DATABASE_URL", ops.RoleWorker, *allowOwner, p.Log)
			acts, err := app.NewActivities(cfg, p.Store, p.Temporal, p.Metrics, p.Log, app.BusinessFrom(cmd.Context()))
			if err != nil {
				return err
			}
			return app.RunWorker(cmd.Context(), cfg, p.Temporal, acts, p.Metrics, cfg.WorkerAddr, p.Log)
		},
	}
	allowOwner = allowOwnerFlag(cmd)
	return cmd
}
