//go:build tools

// Package tools pins Mailpit, the SMTP server with a web UI and HTTP API that
// the local stack and the outbound tests use. Separate module for the same
// reason as tools/temporal.
package tools

import _ "github.com/axllent/mailpit"
