// Command github-issues is a team's whole hookinbox deployment on GitHub's
// issues events: the intake, the worker, the console, migrations, the dev
// stack and the operator CLI, running hookinbox with the team's issues
// handler (package issues). Run it as the hookinbox binary is run
// (`github-issues dev`, `github-issues webhook`, `github-issues worker`,
// `github-issues migrate`, …) and register the endpoint GitHub posts to
// with `github-issues endpoints add --provider github …` and an API token
// that reads the repositories' issues (the handler fetches each issue).
package main

import (
	"github.com/hookinbox/hookinbox"

	"example.com/github-issues/issues"
)

func main() { issues.New(hookinbox.WithProgram("github-issues", "")).Main() }
