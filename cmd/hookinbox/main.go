// Command hookinbox is the service binary: the webhook intake, the Temporal
// worker, the local stack (dev), migrations and the operator CLI. The
// simulator, soak, bench and demo are in cmd/hookinbox-lab, not here.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:   "hookinbox",
		Short: "Receive webhooks and turn each into its business effect exactly once",
		Long: `hookinbox receives webhooks (Stripe, GitHub, Standard Webhooks, Shopify), commits each to a
PostgreSQL inbox before answering, and hands it to one Temporal workflow per resource.

Configuration comes from environment variables (see README.md, "Configuration");
the defaults point at the local stack that 'hookinbox dev' (make run) starts.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newWebhookCmd(),
		newWorkerCmd(),
		newDevCmd(),
		newMigrateCmd(),
		newEndpointsCmd(),
		newOutboxCmd(),
		newWorkspacesCmd(),
		newInboxCmd(),
		newQuarantineCmd(),
		newReplayCmd(),
		newStatusCmd(),
		newReconcileCmd(),
		newSchedulesCmd(),
		newSecretsCmd(),
	)
	cli.Main(ctx, root)
}
