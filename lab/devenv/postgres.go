package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresOptions describe a project-owned PostgreSQL cluster.
type PostgresOptions struct {
	// Dir is the cluster's data directory (created by initdb when missing).
	Dir string
	// Port to listen on, on 127.0.0.1 only.
	Port int
	// Log receives the server's output.
	Log io.Writer
	// Progress receives one-line status messages.
	Progress io.Writer
	// Ephemeral trades durability for speed (fsync off); for tests only.
	Ephemeral bool
}

// Postgres is a running cluster, started here or found running.
type Postgres struct {
	Port    int
	Dir     string
	opts    PostgresOptions
	started *proc
}

// binDir finds the PostgreSQL 15 server binaries.
func binDir() (string, error) {
	if d := os.Getenv("HOOKINBOX_PG_BIN"); d != "" {
		return d, nil
	}
	for _, d := range []string{"/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"} {
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL server binaries not found (looked in /usr/lib/postgresql/{15,16,17}/bin and PATH; set HOOKINBOX_PG_BIN)")
}

// PostgresBinary returns the path of one of PostgreSQL's programs (pg_dump,
// psql…) from the directory the server binaries are found in
// (HOOKINBOX_PG_BIN, /usr/lib/postgresql/{15,16,17}/bin, then PATH), so a
// client program is of the version of the server StartPostgres runs.
func PostgresBinary(name string) (string, error) {
	bin, err := binDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(bin, name)
	if !isExecutable(p) {
		return "", fmt.Errorf("%s is not in %s, beside the PostgreSQL server binaries (set HOOKINBOX_PG_BIN)", name, bin)
	}
	return p, nil
}

// StartPostgres initialises the cluster if needed and starts it, or reuses
// the server already running on the port. Run as root, it uses the
// "postgres" user for initdb and the server.
func StartPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	addr := "127.0.0.1:" + strconv.Itoa(o.Port)
	pg := &Postgres{Port: o.Port, Dir: o.Dir, opts: o}
	if listening(addr) {
		fmt.Fprintf(o.Progress, "postgres: reusing the server already on %s\n", addr)
		return pg, pg.waitReady(ctx, 30*time.Second)
	}
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", o.Dir, err)
	}
	if err := chownTree(o.Dir, cred); err != nil {
		return nil, fmt.Errorf("chown %s: %w", o.Dir, err)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "PG_VERSION")); err != nil {
		fmt.Fprintf(o.Progress, "postgres: creating cluster in %s\n", o.Dir)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", o.Dir, "-U", "postgres",
			"--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %w\n%s", err, out)
		}
	}
	// A stale postmaster.pid from a killed server blocks the start; the
	// server itself checks whether its owner is alive, so just start.
	args := []string{"-D", o.Dir, "-p", strconv.Itoa(o.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "max_connections=200", "-c", "shared_buffers=128MB"}
	if o.Ephemeral {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	p, err := startProc("postgres", exec.Command(filepath.Join(bin, "postgres"), args...), o.Log, cred)
	if err != nil {
		return nil, err
	}
	pg.started = p
	if err := waitTCP(ctx, addr, 60*time.Second, p); err != nil {
		_ = p.stop(syscall.SIGINT, 10*time.Second)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pg.waitReady(ctx, 60*time.Second); err != nil {
		_ = p.stop(syscall.SIGINT, 10*time.Second)
		return nil, err
	}
	fmt.Fprintf(o.Progress, "postgres: started on %s (data in %s)\n", addr, o.Dir)
	return pg, nil
}

// Started reports whether this process started the server (and will stop it).
func (p *Postgres) Started() bool { return p.started != nil }

// AdminURL is the superuser connection string for database db.
func (p *Postgres) AdminURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// URL is the connection string for user on database db.
func (p *Postgres) URL(user, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, p.Port, db)
}

func (p *Postgres) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := pgx.Connect(ctx, p.AdminURL("postgres"))
		if err == nil {
			c.Close(ctx)
			return nil
		}
		// "the database system is starting up" is worth waiting for.
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready on port %d: %w", p.Port, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// EnsureDatabase creates role user (LOGIN) and database db owned by it, if
// they do not exist.
func (p *Postgres) EnsureDatabase(ctx context.Context, user, db string) error {
	c, err := pgx.Connect(ctx, p.AdminURL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, user).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE ROLE "+pgx.Identifier{user}.Sanitize()+" LOGIN"); err != nil && !isDuplicate(err) {
			return fmt.Errorf("create role %s: %w", user, err)
		}
	}
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, db).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()+" OWNER "+pgx.Identifier{user}.Sanitize()); err != nil && !isDuplicate(err) {
			return fmt.Errorf("create database %s: %w", db, err)
		}
	}
	return nil
}

func isDuplicate(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// Stop shuts down a server this process started (fast shutdown); a reused
// server is left alone.
func (p *Postgres) Stop() error {
	if p == nil || p.started == nil {
		return nil
	}
	return p.started.stop(syscall.SIGINT, 30*time.Second)
}

// Restart starts a server this process stopped again, on the same data
// directory and port (outage tests: Stop, wait, Restart).
func (p *Postgres) Restart(ctx context.Context) error {
	if p.started == nil {
		return errors.New("postgres: not started by this process")
	}
	np, err := StartPostgres(ctx, p.opts)
	if err != nil {
		return err
	}
	p.started = np.started
	return nil
}
