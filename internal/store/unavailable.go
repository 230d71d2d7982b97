package store

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable reports whether err says the database could not be reached
// or dropped the connection, rather than that a statement failed: the
// server refused or reset the connection, was shutting down or restarting
// (57P01, 57P02, 57P03), a connection exception (class 08), too many
// connections (53300), a connect that failed or timed out, a pooled
// connection already closed. Work failing for this reason should wait for
// the database, not spend its retry budget.
//
// It looks only at the driver's error types and at network errors raised
// on a connection the store dialed (Open marks them), so a "connection
// refused" from an SMTP server or a provider API is not mistaken for the
// database.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" ||
			pgErr.Code == "53300" || strings.HasPrefix(pgErr.Code, "08")
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var lost *connLost
	if errors.As(err, &lost) {
		return true
	}
	return errors.Is(err, pgconn.ErrConnClosed)
}

// connLost marks an I/O error on a database connection dialed by the store.
// It keeps the original's meaning for errors.Is/As (io.EOF, a net.Error's
// Timeout) so the driver handles it as before.
type connLost struct{ err error }

func (e *connLost) Error() string { return "database connection: " + e.err.Error() }
func (e *connLost) Unwrap() error { return e.err }

// Timeout and Temporary keep a deadline (how the driver cancels a query on
// context cancellation) recognisable as a timeout.
func (e *connLost) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

func (e *connLost) Temporary() bool { return false }

// markedConn marks the I/O errors of a database connection.
type markedConn struct{ net.Conn }

func (c markedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, markIO(err)
}

func (c markedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, markIO(err)
}

func markIO(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// A deadline: the driver's way to cancel a query on its context (it
		// translates this into the context's error itself). Not an outage.
		return err
	}
	return &connLost{err}
}

// markingDialer wraps dial so the connections' I/O errors are marked.
func markingDialer(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err // a connect error: pgconn wraps it in ConnectError
		}
		return markedConn{c}, nil
	}
}
