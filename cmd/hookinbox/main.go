// Command hookinbox is the one binary: the webhook intake, the Temporal
// worker, the local stack (dev), migrations and the operator CLI.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
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
		newSimulateCmd(),
		newOutboxCmd(),
		newWorkspacesCmd(),
		newInboxCmd(),
		newQuarantineCmd(),
		newReplayCmd(),
		newStatusCmd(),
		newReconcileCmd(),
		newSchedulesCmd(),
		newSoakCmd(),
		newDemoCmd(),
		newBenchCmd(),
	)
	if err := root.ExecuteContext(ctx); err != nil {
		var ec exitCode
		if errors.As(err, &ec) {
			os.Exit(ec.code)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// exitCode ends the process with a status and no message (the command
// already printed what it had to say).
type exitCode struct{ code int }

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
