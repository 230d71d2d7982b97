//go:build tools

// Package tools pins Temporal's workflowcheck (determinism checker for
// workflows/) for `make lint`.
package tools

import _ "go.temporal.io/sdk/contrib/tools/workflowcheck"
