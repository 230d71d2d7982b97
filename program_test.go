package hookinbox_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox"
)

// run runs a's command line and returns its status, stdout and stderr.
func run(t *testing.T, a *hookinbox.App, args ...string) (int, string, string) {
	t.Helper()
	capture := func(f **os.File) (func() string, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		old := *f
		*f = w
		out := make(chan string)
		go func() { b, _ := io.ReadAll(r); out <- string(b) }()
		return func() string { *f = old; w.Close(); return <-out }, nil
	}
	stdout, err := capture(&os.Stdout)
	require.NoError(t, err)
	stderr, err := capture(&os.Stderr)
	require.NoError(t, err)
	code := a.Run(context.Background(), args...)
	return code, stdout(), stderr()
}

// A team's program is its own: its usage, its errors and --version name
// it, and --version prints its version beside hookinbox's.
func TestATeamsProgramNamesItselfAndBothVersions(t *testing.T) {
	a := hookinbox.New(hookinbox.WithProgram("teamctl", "v1.2.3"))
	code, out, _ := run(t, a, "--version")
	require.Zero(t, code)
	require.Equal(t, "teamctl v1.2.3 (hookinbox "+hookinbox.Version()+")\n", out)

	code, out, _ = run(t, a, "version")
	require.Zero(t, code)
	require.True(t, strings.HasPrefix(out, "teamctl v1.2.3 (hookinbox "+hookinbox.Version()+") (go"), out)

	code, out, _ = run(t, a, "--help")
	require.Zero(t, code)
	require.Contains(t, out, "\n  teamctl [command]")
	require.NotContains(t, out, "hookinbox [command]")

	code, _, errOut := run(t, a, "no-such-command")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "run 'teamctl --help' for usage")

	bad := hookinbox.New(hookinbox.WithProgram("teamctl", "v1.2.3"), hookinbox.WithMigrations("x", nil))
	code, _, errOut = run(t, bad, "migrate")
	require.Equal(t, 2, code)
	require.True(t, strings.HasPrefix(errOut, "error: teamctl: WithMigrations"), errOut)
}

// Without WithProgram, hookinbox's own binary (and its tests: the main
// module is hookinbox) is hookinbox, with its VERSION.
func TestHookinboxsOwnProgramIsHookinbox(t *testing.T) {
	v, err := os.ReadFile("VERSION")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(v)), hookinbox.Version())
	code, out, _ := run(t, hookinbox.New(), "--help")
	require.Zero(t, code)
	require.Contains(t, out, "\n  hookinbox [command]")
}
