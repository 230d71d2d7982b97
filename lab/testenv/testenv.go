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
	"io/fs"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	creditsschema "github.com/hookinbox/hookinbox/domains/credits/schema"
	feedbackschema "github.com/hookinbox/hookinbox/domains/feedback/schema"
	subscriptionsschema "github.com/hookinbox/hookinbox/domains/subscriptions/schema"
	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/jackc/pgx/v5"
)

var (
	mu       sync.Mutex
	cleanups []func()
	pgOnce   sync.Once
	pgAdmin  string // superuser URL template: %s is the database
	pgErr    error
	// The templates: [0] hookinbox's core migrations alone (a team's App
	// starts from it), [1] those and the built-in domains' sets.
	tmpl      [2]template
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

type template struct {
	once sync.Once
	name string
	err  error
}

// domainSet is one built-in domain's migration set, as its package
// (domains/*/schema) declares it.
type domainSet struct {
	name   string
	fs     fs.FS
	tables []hookintype.Table
}

// builtinDomainSets are the built-in domains' migration sets, in the order
// domains.Register adds them: what DatabaseURL applies after hookinbox's
// own (testenv cannot import package domains: the machinery's tests use it).
func builtinDomainSets() []domainSet {
	return []domainSet{
		{creditsschema.Name, creditsschema.FS(), creditsschema.Tables()},
		{subscriptionsschema.Name, subscriptionsschema.FS(), subscriptionsschema.Tables()},
		{feedbackschema.Name, feedbackschema.FS(), feedbackschema.Tables()},
	}
}

// BuiltinDomainTables are the tables (and view) the built-in domains' sets
// create: none is in a database a team's App migrates.
func BuiltinDomainTables() []string {
	var out []string
	for _, set := range builtinDomainSets() {
		for _, t := range set.tables {
			if len(t.Columns) == 0 && !slices.Contains(out, t.Name) {
				out = append(out, t.Name)
			}
		}
	}
	return out
}

// ApplyBuiltinDomains applies the built-in domains' migration sets to conn
// (a database hookinbox's own migrations are applied to) and returns their
// tables' grants, to apply with the roles.
func ApplyBuiltinDomains(ctx context.Context, conn *pgx.Conn) ([]store.Grant, error) {
	var grants []store.Grant
	for _, set := range builtinDomainSets() {
		if _, err := migrations.UpSet(ctx, conn, migrations.Set{Name: set.name, FS: set.fs}, nil); err != nil {
			return nil, fmt.Errorf("migrations of %s: %w", set.name, err)
		}
		for _, t := range set.tables {
			gs, err := store.TableGrants(t)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", set.name, err)
			}
			grants = append(grants, gs...)
		}
	}
	return grants, nil
}

func makeTemplate(t testing.TB, domains bool) (string, error) {
	ctx := context.Background()
	name := fmt.Sprintf("hookinbox_tmpl_%d", os.Getpid())
	if !domains {
		name += "_core"
	}
	admin, err := pgx.Connect(ctx, AdminURL(t, "postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	adminURL := AdminURL(t, "postgres")
	atExit(func() { dropDatabase(adminURL, name) })
	conn, err := pgx.Connect(ctx, AdminURL(t, name))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := migrations.Up(ctx, conn, nil); err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	var extra []store.Grant
	if domains {
		if extra, err = ApplyBuiltinDomains(ctx, conn); err != nil {
			return "", fmt.Errorf("template: %w", err)
		}
	}
	// The process roles and their grants, as `hookinbox db roles` applies
	// them: every copy of the template inherits the grants (the roles are
	// the server's, shared by every test database).
	if _, _, err := store.ApplyRoles(ctx, conn, store.RoleOptions{Passwords: rolePasswords(), Extra: extra}); err != nil {
		return "", fmt.Errorf("roles on template: %w", err)
	}
	return name, nil
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

// DatabaseURL creates a fresh database for t (dropped at its cleanup),
// migrated as the shipped hookinbox migrates: hookinbox's migrations and
// the built-in domains' sets, with the process roles' grants on both; and
// returns its URL.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	return databaseURL(t, true)
}

// CoreDatabaseURL is DatabaseURL without the built-in domains: hookinbox's
// own migrations alone, where a team's App (hookintest) applies its sets.
func CoreDatabaseURL(t testing.TB) string {
	t.Helper()
	return databaseURL(t, false)
}

func databaseURL(t testing.TB, domains bool) string {
	t.Helper()
	tm := &tmpl[0]
	if domains {
		tm = &tmpl[1]
	}
	tm.once.Do(func() { tm.name, tm.err = makeTemplate(t, domains) })
	if tm.err != nil {
		t.Fatalf("test database template: %v", tm.err)
	}
	tmplName := tm.name
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
	extra, err := ApplyBuiltinDomains(ctx, conn)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// The process roles, as on every test database (RoleURL works here
	// too); creating roles needs the superuser.
	su, err := pgx.Connect(ctx, pg.URL("postgres", "hookinbox"))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	if _, _, err := store.ApplyRoles(ctx, su, store.RoleOptions{Extra: extra}); err != nil {
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
