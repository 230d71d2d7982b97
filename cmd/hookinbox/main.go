// Command hookinbox is the service binary: the webhook intake, the Temporal
// worker, the operator console and API, the local stack (dev), migrations
// and the operator CLI. The simulator, soak, bench and demo are in
// cmd/hookinbox-lab, not here.
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
	code := cli.Run(ctx, newRootCmd(), os.Stderr)
	stop()
	os.Exit(code)
}

// newRootCmd is the whole command tree.
func newRootCmd() *cobra.Command {
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
