package testenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/starter"
)

var (
	temporalOnce sync.Once
	temporalAddr string
	temporalErr  error
)

// EngineEnv chooses the Temporal engine the tests run on: "dev" (the
// default: the CLI's dev server, SQLite, one history shard) or "postgres"
// (go.temporal.io/server on the package's PostgreSQL server, in databases
// of its own, with devenv.DefaultTemporalShards history shards: the shape
// production runs). `make test-e2e-postgres` sets it.
const EngineEnv = "HOOKINBOX_TEMPORAL_ENGINE"

// TemporalEngine is the engine EngineEnv asks for.
func TemporalEngine(t testing.TB) string {
	t.Helper()
	switch e := os.Getenv(EngineEnv); e {
	case "", devenv.EngineDev:
		return devenv.EngineDev
	case devenv.EnginePostgres:
		return e
	default:
		t.Fatalf("%s=%q: want %s or %s", EngineEnv, e, devenv.EngineDev, devenv.EnginePostgres)
		return ""
	}
}

func temporalBinary(t testing.TB, tool devenv.Tool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// The dev server's CLI needs no checkout (a team's tests: Binary); the
	// postgres engine's server is built from tools/ in one.
	var bin string
	var err error
	if tool.OwnSource {
		bin, err = tool.Ensure(ctx, Root(t), os.Stderr)
	} else {
		bin, err = tool.Binary(ctx, os.Stderr)
	}
	if err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
	return bin
}

var temporalDBs atomic.Int64

// startTemporal starts a server of the chosen engine: a dev server
// persisted to dbFile (in memory when empty), or a server on PostgreSQL in
// two fresh databases of the package's server, which drop drops.
func startTemporal(t testing.TB, dbFile string) (srv *devenv.Temporal, drop func(), err error) {
	engine := TemporalEngine(t)
	bin := temporalBinary(t, devenv.TemporalTool(engine))
	port, err := devenv.FreePort()
	if err != nil {
		return nil, nil, err
	}
	log := io.Discard
	if os.Getenv("HOOKINBOX_TEST_TEMPORAL_LOG") != "" {
		log = os.Stderr
	}
	o := devenv.EngineOptions{Engine: engine, Binary: bin, Port: port, DBFile: dbFile,
		SearchAttributes: starter.SearchAttributeTypes(), Log: log}
	if engine == devenv.EnginePostgres {
		o.AdminURL, o.Database = AdminURL(t, "postgres"), fmt.Sprintf("temporal_t%d_%d", os.Getpid(), temporalDBs.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, dropDBs, err := devenv.StartEngine(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	return srv, func() { _ = dropDBs() }, nil
}

// TemporalAddress is the address of the package's shared Temporal server
// (started on first use: an in-memory dev server, or the EngineEnv engine),
// or HOOKINBOX_TEST_TEMPORAL_ADDRESS. Tests sharing it use their own task
// queue and resource accounts.
func TemporalAddress(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server: run without -short")
	}
	if os.Getenv("HOOKINBOX_TEST_TEMPORAL_ADDRESS") == "" && TemporalEngine(t) == devenv.EnginePostgres {
		AdminURL(t, "postgres") // start PostgreSQL outside the Once (it may skip or fail t)
	}
	temporalOnce.Do(func() {
		if a := os.Getenv("HOOKINBOX_TEST_TEMPORAL_ADDRESS"); a != "" {
			temporalAddr = a
			return
		}
		srv, drop, err := startTemporal(t, "")
		if err != nil {
			temporalErr = err
			return
		}
		temporalAddr = srv.Address
		atExit(func() {
			_ = srv.Stop()
			drop()
		})
	})
	if temporalErr != nil {
		t.Fatalf("test Temporal server (%s engine): %v", TemporalEngine(t), temporalErr)
	}
	return temporalAddr
}

// NewTemporal starts a Temporal server for t alone, persisted (a dev
// server's file, or databases of its own on the postgres engine) so a test
// can Kill and Restart it (outage tests). Stopped at cleanup.
func NewTemporal(t testing.TB) *devenv.Temporal {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server: run without -short")
	}
	dir := t.TempDir()
	srv, drop, err := startTemporal(t, filepath.Join(dir, "temporal.db"))
	if err != nil {
		t.Fatalf("dedicated Temporal server (%s engine): %v", TemporalEngine(t), err)
	}
	t.Cleanup(func() {
		_ = srv.Stop()
		drop()
	})
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

// NewTemporalUI starts a dev server for t alone with its Web UI (in memory,
// stopped at cleanup): browser tests look at what the UI shows of a
// workflow. It always runs the dev engine, which serves the UI.
func NewTemporalUI(t testing.TB) *devenv.Temporal {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Temporal dev server: run without -short")
	}
	bin := temporalBinary(t, devenv.TemporalCLI)
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	uiPort, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	log := io.Discard
	if os.Getenv("HOOKINBOX_TEST_TEMPORAL_LOG") != "" {
		log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := devenv.StartTemporal(ctx, devenv.TemporalOptions{Binary: bin, Port: port, UIPort: uiPort,
		SearchAttributes: starter.SearchAttributeTypes(), Log: log})
	if err != nil {
		t.Fatalf("Temporal dev server with its UI: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}
