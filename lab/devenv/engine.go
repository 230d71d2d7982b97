package devenv

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
)

// TemporalTool is the binary that runs engine: the CLI's dev server, or
// tools/temporal-server for EnginePostgres.
func TemporalTool(engine string) Tool {
	if engine == EnginePostgres {
		return TemporalServer
	}
	return TemporalCLI
}

// EngineOptions start a Temporal server of either engine (StartEngine).
type EngineOptions struct {
	// Engine is EngineDev or EnginePostgres; Binary its TemporalTool.
	Engine string
	Binary string
	Port   int
	Nice   int
	// DBFile is the dev server's SQLite file ("": in memory).
	DBFile string
	// AdminURL is a PostgreSQL superuser's URL for the postgres engine,
	// whose server creates Database and Database+"_visibility" there.
	AdminURL, Database string
	SearchAttributes   map[string]string
	Log                io.Writer
}

// StartEngine starts a server of o.Engine. drop removes what the server
// leaves once stopped: the postgres engine's two databases (nothing for a
// dev server, whose file is the caller's).
func StartEngine(ctx context.Context, o EngineOptions) (t *Temporal, drop func() error, err error) {
	if o.Engine != EnginePostgres {
		t, err = StartTemporal(ctx, TemporalOptions{Binary: o.Binary, Port: o.Port, Nice: o.Nice, DBFile: o.DBFile,
			SearchAttributes: o.SearchAttributes, Log: o.Log})
		return t, func() error { return nil }, err
	}
	cfg, err := pgx.ParseConfig(o.AdminURL)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres engine: %w", err)
	}
	vis := o.Database + "_visibility"
	drop = func() error {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return DropDatabases(dctx, o.AdminURL, o.Database, vis)
	}
	t, err = StartTemporalPostgres(ctx, TemporalPostgresOptions{Binary: o.Binary, Port: o.Port, Nice: o.Nice,
		PostgresAddr: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), User: cfg.User, Password: cfg.Password,
		Database: o.Database, VisibilityDatabase: vis, SearchAttributes: o.SearchAttributes, Log: o.Log})
	if err != nil {
		_ = drop()
		return nil, nil, err
	}
	return t, drop, nil
}
