// Command hookinbox-lab is the harness around the service binary: the
// provider simulator, the chaos soak, the benchmarks and the demo. None of
// it ships: the Docker image holds only hookinbox, and nothing here is
// linked into it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/lab/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cli.Main(ctx, newRootCmd())
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "hookinbox-lab",
		Short: "Simulate misbehaving providers, soak, benchmark and demo hookinbox",
		Long: `hookinbox-lab drives hookinbox from the outside: a reproducible misbehaving provider
(simulate), a chaos soak of the real intake and worker processes (soak), benchmarks
against their baselines (bench) and a guided run against the local stack (demo).

The service and the operator commands are in the hookinbox binary; the soak runs its
'webhook' and 'worker' processes (--binary, by default the hookinbox beside this one).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newSimulateCmd(),
		newSoakCmd(),
		newBenchCmd(),
		newReleaseCmd(),
		demo.NewCmd(),
	)
	return root
}
