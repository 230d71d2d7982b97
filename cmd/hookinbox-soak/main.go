// Command hookinbox-soak is the service binary the chaos soak runs as its
// intake and worker processes (`hookinbox-lab soak`): the shipped app with
// the soak team's handler on its own table (lab/soakteam), built the way a
// team builds its own binary, from hookinbox.New, Handle and
// WithMigrations. It runs every command hookinbox does. It is not shipped.
package main

import (
	"fmt"
	"os"

	"github.com/hookinbox/hookinbox/lab/soakteam"
)

func main() {
	app, err := soakteam.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	app.Main()
}
