// Package harness is the fixture's lab/: what it reads is a test variable.
package harness

import "os"

// Root is the harness's checkout.
func Root() string { return os.Getenv("HOOKINBOX_FIXTURE_ROOT") + os.Getenv("OTEL_FIXTURE_MISPLACED") }
