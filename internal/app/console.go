package app

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/console"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Operations is the operator acts' service on a store and a (lazy)
// Temporal client, as the console and the CLI use it.
func Operations(cfg config.Config, st *store.Store, c client.Client, log *slog.Logger, b Business) *ops.Service {
	return &ops.Service{Store: st, Routes: b.Router(cfg, st, log), Handled: b.Routes, Doorbell: Resources(cfg, c), Temporal: c,
		Config: cfg, Logger: log, SignalTimeout: 10 * time.Second}
}

// NewConsole builds the operator API and console on st (its own role,
// hookinbox_console) and payloads, where it reads payloads (its pool as
// hookinbox_payload_reader; nil: st).
func NewConsole(cfg config.Config, st, payloads *store.Store, c client.Client, log *slog.Logger, b Business) (*console.Server, error) {
	svc := Operations(cfg, st, c, log, b)
	svc.Payloads = payloads
	return console.New(console.Options{Ops: svc, Logger: log,
		SecureCookies: strings.HasPrefix(cfg.ConsoleBaseURL(), "https://"), SessionTTL: cfg.ConsoleSessionTTL})
}

// ConsoleProcess is what the console runs on: its process (its store as
// hookinbox_console, the Temporal client) and its payload pool.
type ConsoleProcess struct {
	*Process
	Payloads *store.Store
}

// OpenConsole opens the console's stores (ConsoleDB and PayloadDB) and a
// lazy Temporal client. Without HOOKINBOX_CONSOLE_DATABASE_URL it runs as
// the schema owner, and says so.
func OpenConsole(ctx context.Context, cfg config.Config) (*ConsoleProcess, error) {
	p, err := OpenProcess(ctx, cfg, ConsoleDB(cfg), true)
	if err != nil {
		return nil, err
	}
	if cfg.ConsoleDatabaseURL == "" {
		p.Log.Warn("the console connects with DATABASE_URL, as the schema owner: give it its own role with " +
			"HOOKINBOX_CONSOLE_DATABASE_URL (hookinbox_console) and HOOKINBOX_PAYLOAD_DATABASE_URL (hookinbox_payload_reader)")
	}
	payloads, err := OpenStore(ctx, cfg, PayloadDB(cfg))
	if err != nil {
		p.Close()
		return nil, err
	}
	return &ConsoleProcess{Process: p, Payloads: payloads}, nil
}

// Close closes the payload pool and the process.
func (p *ConsoleProcess) Close() {
	p.Payloads.Close()
	p.Process.Close()
}

// RunConsole serves the console on ln (or addr) and carries out replay
// jobs until ctx ends.
func RunConsole(ctx context.Context, srv *console.Server, addr string, ln net.Listener, log *slog.Logger) error {
	jctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { srv.RunJobs(jctx); close(done) }()
	err := Serve(ctx, addr, ln, srv.Handler(), log)
	cancel()
	<-done
	return err
}
