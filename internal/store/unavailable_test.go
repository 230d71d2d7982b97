package store_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// cutter is a TCP proxy to the database whose connections can be cut
// (reset, as a lost network would), to see what the store's callers get.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []*net.TCPConn
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &cutter{ln: ln}
	t.Cleanup(func() { ln.Close(); c.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in.(*net.TCPConn), out.(*net.TCPConn))
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in) }()
			go func() { _, _ = io.Copy(in, out) }()
		}
	}()
	return c
}

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.SetLinger(0) // RST, not FIN
		conn.Close()
	}
	c.conns = nil
}

func TestIsUnavailableTellsALostDatabaseFromAFailedStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)

	t.Run("nothing listens", func(t *testing.T) {
		t.Parallel()
		port, err := devenv.FreePort()
		require.NoError(t, err)
		u, _ := url.Parse(dbURL)
		u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		_, err = store.Open(ctx, u.String(), 1)
		require.Error(t, err)
		require.True(t, store.IsUnavailable(err), "%v", err)
	})
	t.Run("the backend is terminated (admin shutdown, 57P01)", func(t *testing.T) {
		t.Parallel()
		st, err := store.Open(ctx, dbURL, 2)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		conn, err := st.Pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		var pid int
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
		var ok bool
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok))
		require.True(t, ok)
		_, err = conn.Exec(ctx, `SELECT 1`)
		require.Error(t, err)
		require.True(t, store.IsUnavailable(err), "%v", err)
	})
	t.Run("the network drops the connection", func(t *testing.T) {
		t.Parallel()
		u, _ := url.Parse(dbURL)
		c := newCutter(t, u.Host)
		u.Host = c.ln.Addr().String()
		st, err := store.Open(ctx, u.String(), 1)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		conn, err := st.Pool.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		c.cut()
		time.Sleep(50 * time.Millisecond)
		_, err = conn.Exec(ctx, `SELECT 1`)
		require.Error(t, err)
		require.True(t, store.IsUnavailable(err), "%v", err)
	})
	t.Run("statements that fail are not an outage", func(t *testing.T) {
		t.Parallel()
		st, err := store.Open(ctx, dbURL, 2)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		_, err = st.Pool.Exec(ctx, `SELECT 1/0`)
		require.Error(t, err)
		require.False(t, store.IsUnavailable(err), "%v", err)
		qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err = st.Pool.Exec(qctx, `SELECT pg_sleep(5)`)
		require.Error(t, err)
		require.False(t, store.IsUnavailable(err), "a query cancelled by its context: %v", err)
	})
	t.Run("another service's network errors are not the database", func(t *testing.T) {
		t.Parallel()
		port, err := devenv.FreePort()
		require.NoError(t, err)
		_, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) // an SMTP server that is down
		require.Error(t, err)
		require.False(t, store.IsUnavailable(err), "%v", err)
		require.False(t, store.IsUnavailable(io.ErrUnexpectedEOF))
		require.False(t, store.IsUnavailable(context.DeadlineExceeded))
		require.False(t, store.IsUnavailable(nil))
	})
}
