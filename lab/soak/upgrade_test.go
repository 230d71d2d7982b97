package soak_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/soak"
	"github.com/hookinbox/hookinbox/lab/verify"
)

// upgradeFrom is the release an upgrade test starts from:
// HOOKINBOX_UPGRADE_FROM, else testdata/upgrade-from (the commit before the
// current release's changes; each release moves it to the previous one).
func upgradeFrom(t *testing.T) string {
	t.Helper()
	if ref := os.Getenv("HOOKINBOX_UPGRADE_FROM"); ref != "" {
		return ref
	}
	b, err := os.ReadFile(filepath.Join("testdata", "upgrade-from"))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// buildRef builds cmd/hookinbox as it was at ref, from the repository's own
// history (git archive: the working tree and .git are left alone).
func buildRef(t *testing.T, ref string) string {
	t.Helper()
	root, err := devenv.FindRoot()
	require.NoError(t, err)
	src := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", ref)
	untar := exec.Command("tar", "-x", "-C", src)
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	pipe, err := archive.StdoutPipe()
	require.NoError(t, err)
	untar.Stdin = pipe
	require.NoError(t, untar.Start())
	require.NoError(t, archive.Run(), "git archive %s (a shallow clone lacks the previous release: fetch it, or set HOOKINBOX_UPGRADE_FROM): %s", ref, stderr.String())
	require.NoError(t, untar.Wait())
	bin := filepath.Join(t.TempDir(), "hookinbox-"+ref[:min(12, len(ref))])
	build := exec.Command("go", "build", "-o", bin, "./cmd/hookinbox")
	build.Dir = src
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/hookinbox at %s:\n%s", ref, out)
	return bin
}

// TestUpgradeWithWorkInFlight is make test-upgrade: the previous release
// migrates a database, registers the endpoints with its own CLI and runs
// two intakes and two workers; halfway through the deliveries every process
// is killed with work in flight, this build migrates the same database and
// takes over. Every row must then complete, with every invariant held
// against the simulators' ground truth (credits exact, one email each).
func TestUpgradeWithWorkInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two releases and runs processes, PostgreSQL and the Temporal dev server: run without -short")
	}
	ref := upgradeFrom(t)
	old := buildRef(t, ref)
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	log := &testLog{t: t}
	res, err := soak.Run(ctx, soak.Options{
		Binary: bin, UpgradeFrom: old, UpgradeAt: 0.5,
		Seed: 11, Events: 900, Intakes: 2, Workers: 2, Concurrency: 4,
		SendOver:  20 * time.Second,
		KillEvery: 4 * time.Second, MinKills: 1,
		DropConnsEvery: 3 * time.Second, MinConnDrops: 1,
		NoTemporalRestart: true,
		ConvergeTimeout:   10 * time.Minute, ChaosLimit: 4 * time.Minute,
		Coalesce: true, // the GitHub route becomes coalescing at the upgrade
		Progress: log,
	})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, res.Report.WriteTable(&out))
	res.Summary.Write(&out)
	if res.Kept {
		t.Logf("process logs kept in %s", res.Dir)
	}
	t.Logf("upgrade from %s: invariants and summary:\n%s", ref, out.String())
	require.True(t, res.Summary.Upgraded, "the fleet was replaced by this build")
	require.True(t, res.Converged, "every row completes after the upgrade")
	require.True(t, res.Report.OK, "every invariant holds across the upgrade:\n%s", out.String())
	for _, r := range res.Report.Results {
		require.NotEqual(t, verify.StatusViolation, r.Status, r.Name)
	}
	// Not vacuous: invoices were granted, subscriptions projected, alerts
	// and emails made, on both sides of the upgrade.
	for _, name := range []string{verify.AckedSettled, verify.GrantPerInvoice, verify.BalanceMatches, verify.ProjectionMatches,
		verify.AlertPerFeedback, verify.EmailPerConfirmation} {
		r := res.Report.Get(name)
		require.Equal(t, verify.StatusOK, r.Status, name)
		require.Positive(t, r.Expected, name)
	}
	require.Greater(t, res.Report.Get(verify.GrantPerInvoice).Expected, int64(150), "about 300 invoices")
}
