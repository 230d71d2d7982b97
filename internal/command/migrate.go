package command

import (
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/config"
)

func newMigrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded database migrations to DATABASE_URL",
		Long: `Apply every embedded migration not yet applied (jackc/tern; concurrent runs are serialized by an
advisory lock). When the process roles exist ('hookinbox db roles'), their grants are then applied
again, so columns and tables added by a migration are covered (or stay hidden) as the grant list says.
Then, when a secrets key is configured (HOOKINBOX_SECRETS_KEY or HOOKINBOX_SECRETS_KEY_FILE), seal
every secret still kept in a plain column and null the column; safe to run again, and beside a
running intake.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			return migrate(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
}
