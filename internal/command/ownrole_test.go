package command

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// L6 (issue #32): webhook, worker and console used to fall back to
// DATABASE_URL, the schema owner, without a word when their own URL was
// unset: handlers then ran as the owner. Each now exits non-zero naming
// the variable to set, before connecting to anything, unless
// --allow-owner (which then goes on and connects as the owner).
func TestProcessesRefuseToRunAsTheOwnerWithoutAllowOwner(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	for _, v := range []string{"HOOKINBOX_INTAKE_DATABASE_URL", "HOOKINBOX_WORKER_DATABASE_URL", "HOOKINBOX_CONSOLE_DATABASE_URL",
		"HOOKINBOX_PAYLOAD_DATABASE_URL"} {
		t.Setenv(v, "")
	}
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	for cmd, variable := range map[string]string{"webhook": "HOOKINBOX_INTAKE_DATABASE_URL", "worker": "HOOKINBOX_WORKER_DATABASE_URL",
		"console": "HOOKINBOX_CONSOLE_DATABASE_URL"} {
		code, stderr := runCLI(t, "", cmd)
		require.NotZero(t, code, "%s starts as the schema owner", cmd)
		require.Contains(t, stderr, variable, cmd)
		require.Contains(t, stderr, "--allow-owner", cmd)

		code, stderr = runCLI(t, "", cmd, "--allow-owner")
		require.NotZero(t, code, "%s: nothing to connect to here", cmd)
		require.NotContains(t, stderr, variable+" is not set", "%s --allow-owner goes on as the owner", cmd)
	}
}
