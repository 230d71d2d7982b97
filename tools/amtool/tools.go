//go:build tools

// Package tools pins amtool, Alertmanager's command-line tool, which
// `make compose-check` (scripts/compose-check.sh) runs as `amtool
// check-config` on deploy/alertmanager/alertmanager.yml; the version is the
// compose file's prom/alertmanager image's. Separate module for the same
// reason as tools/temporal.
package tools

import _ "github.com/prometheus/alertmanager/cmd/amtool"
