// Package testenv gives tests the real components: a PostgreSQL server with a
// fresh database per test, migrated by the production migrations, and a
// Temporal dev server. By default each test binary (package) starts its own
// throw-away PostgreSQL cluster and dev server, so packages run in parallel
// without sharing state; HOOKINBOX_TEST_DATABASE_URL (a superuser URL) and
// HOOKINBOX_TEST_TEMPORAL_ADDRESS point them at existing servers instead;
// HOOKINBOX_TEMPORAL_ENGINE=postgres replaces the dev server by a Temporal
// server on PostgreSQL with 4 history shards (EngineEnv).
//
// Use it from TestMain: func TestMain(m *testing.M) { testenv.Main(m) }.
package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/jackc/pgx/v5"
)

var (
	mu        sync.Mutex
	cleanups  []func()
	pgOnce    sync.Once
	pgAdmin   string // superuser URL template: %s is the database
	pgErr     error
	tmplOnce  sync.Once
	tmplName  string
	tmplErr   error
	dbCounter atomic.Int64
)

// Main runs the package's tests and stops what testenv started.
func Main(m *testing.M) {
	code := m.Run()
	shutdown()
	os.Exit(code)
}

func shutdown() {
	mu.Lock()
	defer mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanups = nil
}

func atExit(f func()) {
	mu.Lock()
	defer mu.Unlock()
	cleanups = append(cleanups, f)
}

// Root is the project root.
func Root(t testing.TB) string {
	t.Helper()
	r, err := devenv.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func startPostgres() {
	if u := os.Getenv("HOOKINBOX_TEST_DATABASE_URL"); u != "" {
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			pgErr = fmt.Errorf("HOOKINBOX_TEST_DATABASE_URL: %w", err)
			return
		}
		pgAdmin = fmt.Sprintf("postgres://%s:%s@%s:%d/%%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port)
		return
	}
	dir, err := os.MkdirTemp("", "hookinbox-pg-")
	if err != nil {
		pgErr = err
		return
	}
	port, err := devenv.FreePort()
	if err != nil {
		pgErr = err
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := devenv.StartPostgres(ctx, devenv.PostgresOptions{Dir: dir, Port: port, Ephemeral: true})
	if err != nil {
		os.RemoveAll(dir)
		pgErr = err
		return
	}
	atExit(func() {
		_ = pg.Stop()
		os.RemoveAll(dir)
	})
	pgAdmin = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%%s?sslmode=disable", port)
}

// AdminURL is a superuser URL of the test server for database db.
func AdminURL(t testing.TB, db string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL: run without -short")
	}
	pgOnce.Do(startPostgres)
	if pgErr != nil {
		t.Fatalf("test PostgreSQL: %v", pgErr)
	}
	return fmt.Sprintf(pgAdmin, db)
}

func makeTemplate(t testing.TB) {
	ctx := context.Background()
	name := fmt.Sprintf("hookinbox_tmpl_%d", os.Getpid())
	admin, err := pgx.Connect(ctx, AdminURL(t, "postgres"))
	if err != nil {
		tmplErr = err
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tmplErr = fmt.Errorf("create template: %w", err)
		return
	}
	conn, err := pgx.Connect(ctx, AdminURL(t, name))
	if err != nil {
		tmplErr = err
		return
	}
	if _, err := migrations.Up(ctx, conn, nil); err != nil {
		conn.Close(ctx)
		tmplErr = fmt.Errorf("migrate template: %w", err)
		return
	}
	// The process roles and their grants, as `hookinbox db roles` applies
	// them: every copy of the template inherits the grants (the roles are
	// the server's, shared by every test database).
	if _, _, err := store.ApplyRoles(ctx, conn, store.RoleOptions{Passwords: rolePasswords()}); err != nil {
		conn.Close(ctx)
		tmplErr = fmt.Errorf("roles on template: %w", err)
		return
	}
	conn.Close(ctx)
	tmplName = name
	adminURL := AdminURL(t, "postgres")
	atExit(func() { dropDatabase(adminURL, name) })
}

func dropDatabase(adminURL, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return
	}
	defer c.Close(ctx)
	_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// DatabaseURL creates a fresh, migrated database for t (dropped at its
// cleanup) and returns its URL.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	tmplOnce.Do(func() { makeTemplate(t) })
	if tmplErr != nil {
		t.Fatalf("test database template: %v", tmplErr)
	}
	name := fmt.Sprintf("hookinbox_t%d_%d", os.Getpid(), dbCounter.Add(1))
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, AdminURL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// CREATE DATABASE … TEMPLATE fails while another session uses the
	// template; copies are serialized by this process, so retry briefly.
	for i := 0; ; i++ {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmplName)
		if err == nil || i > 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	adminURL := AdminURL(t, "postgres")
	t.Cleanup(func() { dropDatabase(adminURL, name) })
	return AdminURL(t, name)
}

// secretsKey is the test binary's key-encryption key: random, so no test
// can depend on a key written in the code.
var secretsKey = sync.OnceValue(secretbox.GenerateKey)

// SecretsKey is the test binary's HOOKINBOX_SECRETS_KEY (base64), for
// processes and configurations the tests start.
func SecretsKey() string { return secretsKey() }

// Keys is the keyring of SecretsKey.
func Keys(t testing.TB) *secretbox.Keyring {
	t.Helper()
	k, err := secretbox.ParseKey(SecretsKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rolePasswords gives the process roles the admin URL's password, if it has
// one (a server that asks for passwords, via HOOKINBOX_TEST_DATABASE_URL);
// the throw-away cluster trusts loopback and needs none.
func rolePasswords() map[string]string {
	pw := adminPassword()
	if pw == "" {
		return nil
	}
	return map[string]string{store.RoleIntake: pw, store.RoleWorker: pw, store.RoleOperator: pw, store.RoleConsole: pw,
		store.RolePayloadReader: pw}
}

func adminPassword() string {
	cfg, err := pgx.ParseConfig(fmt.Sprintf(pgAdmin, "postgres"))
	if err != nil {
		return ""
	}
	return cfg.Password
}

// RoleURL is dbURL (a DatabaseURL) connecting as role instead, with the
// password the test roles were given. Role is one of store.Roles, or a login
// role a test created (then with the same password, if any).
func RoleURL(t testing.TB, dbURL, role string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("role URL: %v", err)
	}
	if pw := adminPassword(); pw != "" {
		u.User = url.UserPassword(role, pw)
	} else {
		u.User = url.User(role)
	}
	return u.String()
}

// Store opens a pool on a fresh database (closed at cleanup), sealing
// secrets with Keys.
func Store(t testing.TB) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, DatabaseURL(t), 20)
	if err != nil {
		t.Fatal(err)
	}
	s.Keys = Keys(t)
	t.Cleanup(s.Close)
	return s
}

// NewPostgres starts a PostgreSQL server for t alone (so a test can Stop
// and Restart it: outage tests) and returns it with the URL of a migrated
// database on it. Stopped at cleanup.
func NewPostgres(t testing.TB) (*devenv.Postgres, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL: run without -short")
	}
	dir, err := os.MkdirTemp("", "hookinbox-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := devenv.StartPostgres(ctx, devenv.PostgresOptions{Dir: dir, Port: port, Ephemeral: true})
	if err != nil {
		t.Fatalf("dedicated PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	if err := pg.EnsureDatabase(ctx, "hookinbox", "hookinbox"); err != nil {
		t.Fatal(err)
	}
	u := pg.URL("hookinbox", "hookinbox")
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Up(ctx, conn, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// The process roles, as on every test database (RoleURL works here
	// too); creating roles needs the superuser.
	su, err := pgx.Connect(ctx, pg.URL("postgres", "hookinbox"))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if _, _, err := store.ApplyRoles(ctx, su, store.RoleOptions{}); err != nil {
		t.Fatalf("roles: %v", err)
	}
	return pg, u
}

// AllowConnections lets clients connect to database db again or, with
// allow false, refuses new connections and ends the open ones: the database
// gone, as a process using it sees it. adminURL is a superuser's.
func AllowConnections(t testing.TB, adminURL, db string, allow bool) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, adminURL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err = s.Pool.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS %t`, db, allow)); err != nil {
		t.Fatal(err)
	}
	if !allow {
		if _, err = s.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db); err != nil {
			t.Fatal(err)
		}
	}
}
