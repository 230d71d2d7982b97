// Command provisioning is a team's whole hookinbox deployment, built from
// its own module: the intake, the worker, the console, migrations, the dev
// stack and the operator CLI, running hookinbox with the team's own
// handler. Run it as the hookinbox binary is run (`provisioning dev`,
// `provisioning webhook`, `provisioning worker`, `provisioning migrate`, …).
package main

import "example.com/provisioning/provisioning"

func main() { provisioning.New().Main() }
