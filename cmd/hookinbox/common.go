package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/hookinbox/hookinbox/starter"
)

// dialTemporal connects to Temporal, waiting up to a minute for it to come
// up (a worker started beside a booting server).
func dialTemporal(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...starter.Option) (client.Client, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := starter.Dial(dctx, cfg, log, opts...)
		cancel()
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("Temporal not reachable yet; retrying", "address", cfg.TemporalAddress, "error", err.Error())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// migrate applies pending migrations to url, printing each to out.
func migrate(ctx context.Context, url string, out io.Writer) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	n, err := migrations.Up(ctx, conn, func(seq int32, name string) {
		fmt.Fprintf(out, "migrating: %04d %s\n", seq, name)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "migrations: %d applied, database up to date\n", n)
	return nil
}

// outputFormat is a --output flag value.
type outputFormat string

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "table|json" }
func (o *outputFormat) Set(s string) error {
	if s != "table" && s != "json" {
		return fmt.Errorf("must be table or json")
	}
	*o = outputFormat(s)
	return nil
}

// render writes rows as a table (header first) or v as indented JSON.
func render(w io.Writer, format outputFormat, v any, header []string, rows [][]string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, h := range header {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, h)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
