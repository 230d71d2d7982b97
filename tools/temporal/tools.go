//go:build tools

// Package tools pins the Temporal CLI (dev server and UI) that `make run`
// and `make test` build into .tools/. It is a separate module so the CLI's
// large dependency graph never touches the service's go.mod.
package tools

import _ "github.com/temporalio/cli/cmd/temporal"
