package command

import (
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
)

// NewRootCmd is the whole command tree of the hookinbox binary.
func NewRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "hookinbox",
		Short: "Receive webhooks and turn each into its business effect exactly once",
		Long: `hookinbox receives webhooks (Stripe, GitHub, Standard Webhooks, Shopify), commits each to a
PostgreSQL inbox before answering, and hands it to one Temporal workflow per resource.

Configuration comes from environment variables (see README.md, "Configuration");
the defaults point at the local stack that 'hookinbox dev' (make run) starts.`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("hookinbox {{.Version}}\n")
	root.AddCommand(
		newWebhookCmd(),
		newWorkerCmd(),
		newConsoleCmd(),
		newDevCmd(),
		newMigrateCmd(),
		newDBCmd(),
		newEndpointsCmd(),
		newOutboxCmd(),
		newWorkspacesCmd(),
		newInboxCmd(),
		newQuarantineCmd(),
		newReplayCmd(),
		newSendCmd(),
		newRoutesCmd(),
		newNotificationsCmd(),
		newExplainCmd(),
		newTokensCmd(),
		newStatusCmd(),
		newReconcileCmd(),
		newSchedulesCmd(),
		newSecretsCmd(),
		newVersionCmd(),
	)
	cli.WrapErrors(root, asUsage)
	return root
}
