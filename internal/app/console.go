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
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Operations is the operator acts' service on a store and a (lazy)
// Temporal client, as the console and the CLI use it.
func Operations(cfg config.Config, st *store.Store, c client.Client, log *slog.Logger, rt routes.Router) *ops.Service {
	return &ops.Service{Store: st, Routes: rt, Doorbell: Resources(cfg, c), Temporal: c, Config: cfg, Logger: log, SignalTimeout: 10 * time.Second}
}

// NewConsole builds the operator API and console.
func NewConsole(cfg config.Config, st *store.Store, c client.Client, log *slog.Logger, rt routes.Router) (*console.Server, error) {
	return console.New(console.Options{Ops: Operations(cfg, st, c, log, rt), Logger: log,
		SecureCookies: strings.HasPrefix(cfg.ConsoleBaseURL(), "https://"), SessionTTL: cfg.ConsoleSessionTTL})
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
