package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// unavailable ends a test whose tool or corpus cannot be had: a failure
// under CI (devenv.CI), where everything the tests need must be there, and
// a skip elsewhere (a machine without npm, say).
func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if devenv.CI() {
		t.Fatalf("%s is unavailable under CI: %v", what, err)
	}
	t.Skipf("%s is unavailable (under CI=true this fails): %v", what, err)
}

// NPMPackage is the folder of the pinned npm package p, fetched into
// .tools/ first if missing (make tools does it ahead).
func NPMPackage(t testing.TB, p devenv.NPMPackage) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: run without -short", p.Package)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := p.Ensure(ctx, Root(t), os.Stderr)
	if err != nil {
		unavailable(t, p.Package, err)
	}
	return dir
}

// StripeMock starts a stripe-mock for t alone on loopback (built into
// .tools/ first if missing) and returns its base URL. Stopped at cleanup.
func StripeMock(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs stripe-mock: run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin, err := devenv.StripeMock.Ensure(ctx, Root(t), os.Stderr)
	if err != nil {
		unavailable(t, "stripe-mock", err)
	}
	srv, err := devenv.StartStripeMock(ctx, bin, nil)
	if err != nil {
		t.Fatalf("stripe-mock: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv.URL
}
