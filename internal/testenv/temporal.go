package testenv

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/devenv"
	"github.com/hookinbox/hookinbox/starter"
)

var (
	temporalOnce sync.Once
	temporalAddr string
	temporalErr  error
)

func temporalBinary(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin, err := devenv.TemporalCLI.Ensure(ctx, Root(t), os.Stderr)
	if err != nil {
		t.Fatalf("temporal CLI: %v", err)
	}
	return bin
}

func startTemporal(t testing.TB, dbFile string) (*devenv.Temporal, error) {
	bin := temporalBinary(t)
	port, err := devenv.FreePort()
	if err != nil {
		return nil, err
	}
	log := io.Discard
	if os.Getenv("HOOKINBOX_TEST_TEMPORAL_LOG") != "" {
		log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return devenv.StartTemporal(ctx, devenv.TemporalOptions{
		Binary: bin, Port: port, DBFile: dbFile, SearchAttributes: starter.SearchAttributeTypes(), Log: log,
	})
}

// TemporalAddress is the address of the package's shared dev server
// (in memory, started on first use), or HOOKINBOX_TEST_TEMPORAL_ADDRESS.
// Tests sharing it use their own task queue and resource accounts.
func TemporalAddress(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server: run without -short")
	}
	temporalOnce.Do(func() {
		if a := os.Getenv("HOOKINBOX_TEST_TEMPORAL_ADDRESS"); a != "" {
			temporalAddr = a
			return
		}
		srv, err := startTemporal(t, "")
		if err != nil {
			temporalErr = err
			return
		}
		temporalAddr = srv.Address
		atExit(func() { _ = srv.Stop() })
	})
	if temporalErr != nil {
		t.Fatalf("test Temporal dev server: %v", temporalErr)
	}
	return temporalAddr
}

// NewTemporal starts a dev server for t alone, persisted to a file so a
// test can Kill and Restart it (outage tests). Stopped at cleanup.
func NewTemporal(t testing.TB) *devenv.Temporal {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server: run without -short")
	}
	dir := t.TempDir()
	srv, err := startTemporal(t, filepath.Join(dir, "temporal.db"))
	if err != nil {
		t.Fatalf("dedicated Temporal dev server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// TemporalClient dials addr (namespace "default"), closed at cleanup.
func TemporalClient(t testing.TB, addr string) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("dial Temporal %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// quietLogger drops the SDK's client logs in tests.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
