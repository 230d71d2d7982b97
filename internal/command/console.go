package command

import (
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
)

func newConsoleCmd() *cobra.Command {
	var allowOwner *bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Run the operator console and API on the internal listener (HOOKINBOX_CONSOLE_ADDR)",
		Long: `Run the operator console (web pages) and the operator API (/api/…, OpenAPI at /api/openapi.json)
on HOOKINBOX_CONSOLE_ADDR (default 127.0.0.1:9092): keep it off the public webhook port. It
needs PostgreSQL, as its own role (HOOKINBOX_CONSOLE_DATABASE_URL, hookinbox_console; payloads
are read on HOOKINBOX_PAYLOAD_DATABASE_URL, hookinbox_payload_reader; without its own URL it refuses
to start, unless --allow-owner runs it as DATABASE_URL's schema owner), and signals Temporal (TEMPORAL_ADDRESS) for replays; it also
carries out the replay jobs started from the console or the API. Sign in with a token from
'hookinbox tokens create'. Pages link each resource's workflow to the Temporal UI
(HOOKINBOX_TEMPORAL_UI_URL); HOOKINBOX_CONSOLE_URL is where the workflows link back.
See docs/console.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			// As its own role (hookinbox_console), payloads on a pool of
			// their own (hookinbox_payload_reader).
			if err := app.OwnRole(cfg.ConsoleDatabaseURL, "HOOKINBOX_CONSOLE_DATABASE_URL", ops.RoleConsole, *allowOwner, nil); err != nil {
				return err
			}
			p, err := app.OpenConsole(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer p.Close()
			srv, err := app.NewConsole(cfg, p.Store, p.Payloads, p.Temporal, p.Log.With("process", "console"), app.BusinessFrom(cmd.Context()))
			if err != nil {
				return err
			}
			return app.RunConsole(cmd.Context(), srv, cfg.ConsoleAddr, nil, p.Log)
		},
	}
	allowOwner = allowOwnerFlag(cmd)
	return cmd
}
