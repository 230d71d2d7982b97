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

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/command"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := cli.Run(ctx, command.NewRootCmd(), os.Stderr)
	stop()
	os.Exit(code)
}
