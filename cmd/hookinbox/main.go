// Command hookinbox is the shipped binary: the public app (package
// hookinbox) with the built-in domains (package domains). It runs the
// webhook intake, the Temporal worker, the operator console and API, the
// local stack (dev), migrations and the operator CLI. A team's own binary
// is the same few lines with its own handlers (examples/provisioning).
// The simulator, soak, bench and demo are in cmd/hookinbox-lab.
package main

import (
	"fmt"
	"os"

	"github.com/hookinbox/hookinbox/domains"
)

func main() {
	app, err := domains.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	app.Main()
}
