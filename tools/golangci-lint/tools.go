//go:build tools

// Package tools pins golangci-lint v2 for `make lint`, in its own module so
// its dependencies never touch the service's go.mod.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
