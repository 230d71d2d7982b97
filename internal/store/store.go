// Package store owns every SQL statement of hookinbox: one function per
// statement, named for what it does, parameters always bound. It translates
// driver errors at its boundary (pgx.ErrNoRows → fault.ErrNotFound) and offers the
// one transaction helper activities use. It never calls the network other
// than the database, and no transaction here spans a call to anything else.
package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// DB is what the query functions need: a pool, a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store wraps the pool and the keyring that seals and opens the secrets
// kept in the database (signing secrets, API keys, destination secrets).
// Without Keys, reading a sealed secret or writing any secret fails with
// secretbox.ErrNoKey.
type Store struct {
	Pool *pgxpool.Pool
	Keys *secretbox.Keyring
}

// Pool defaults, applied when the connection string does not say. A
// process that has lost its database must fail fast, not queue: a bounded
// pool, a bounded dial and a bounded statement keep a slow or unreachable
// database from holding every request (the intake answers 503 and the
// sender retries).
const (
	// DefaultMaxConns is the pool size (pool_max_conns=N overrides).
	DefaultMaxConns = 16
	// DefaultStatementTimeout bounds every statement on the server side
	// (statement_timeout=… in the URL, or options=-c statement_timeout=…,
	// overrides; 0 turns it off).
	DefaultStatementTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds dialling the server (connect_timeout=N
	// seconds, or PGCONNECT_TIMEOUT, overrides).
	DefaultConnectTimeout = 5 * time.Second
)

// Open connects a pool to url and checks it answers. maxConns > 0 sizes
// the pool whatever the URL says (tests and benchmarks); otherwise
// pool_max_conns in the URL, or DefaultMaxConns.
func Open(ctx context.Context, url string, maxConns int32) (*Store, error) {
	cfg, err := ParsePoolConfig(url)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	// Network errors on these connections are marked, so IsUnavailable can
	// tell a lost database from any other service's network error.
	cfg.ConnConfig.DialFunc = markingDialer(cfg.ConnConfig.DialFunc)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{Pool: pool}, nil
}

// ParsePoolConfig parses url and fills in the pool defaults it does not
// set: DefaultMaxConns, DefaultStatementTimeout, DefaultConnectTimeout.
func ParsePoolConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	// pgxpool removes pool_max_conns from the parameters once read, so
	// the connection string is the only place left to tell "set" from
	// "pgxpool's default".
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	params := cfg.ConnConfig.RuntimeParams
	if _, ok := params["statement_timeout"]; !ok && !strings.Contains(params["options"], "statement_timeout") {
		params["statement_timeout"] = fmt.Sprint(DefaultStatementTimeout.Milliseconds())
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// What pgconn does for connect_timeout: a dialer with a timeout
		// (and pgx's usual keep-alive).
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
		d := &net.Dialer{Timeout: DefaultConnectTimeout, KeepAlive: 5 * time.Minute}
		cfg.ConnConfig.DialFunc = d.DialContext
	}
	return cfg, nil
}

// Close closes the pool.
func (s *Store) Close() { s.Pool.Close() }

// Tx runs fn in one transaction: committed when fn returns nil, rolled back
// otherwise. Keep fn short and free of network calls.
func (s *Store) Tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.Pool, fn)
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.Pool.Ping(ctx) }

// Interpret translates driver errors at the store boundary: no row is
// fault.ErrNotFound.
func Interpret(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.ErrNotFound
	}
	return err
}

// AppendRows appends every row scan reads to out and closes rows. out says
// what no rows answer: nil, or an empty slice where callers show "[]".
// (pgx.AppendRows wants a scanner of pgx.CollectableRow; these scanners also
// read the pgx.Row of QueryRow.)
func AppendRows[T any](out []T, rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ByValue turns a scanner of *T into one of T, for appendRows into a []T.
func ByValue[T any](scan func(pgx.Row) (*T, error)) func(pgx.Row) (T, error) {
	return func(row pgx.Row) (T, error) {
		p, err := scan(row)
		if err != nil {
			var zero T
			return zero, err
		}
		return *p, nil
	}
}

// IsUniqueViolation reports a 23505 error.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// IsForeignKeyViolation reports a 23503 error.
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}
