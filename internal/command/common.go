package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/migrations"
)

// migrate applies pending migrations to cfg's database (the schema
// owner's, DATABASE_URL), printing each to out, re-applies the process
// roles' grants, then seals the secrets still kept in plain columns when a
// secrets key is configured (or says how many remain when none is), and
// computes the display fingerprints written before they were stored.
func migrate(ctx context.Context, cfg config.Config, out io.Writer) error {
	if err := migrateSchema(ctx, app.OwnerDB(cfg).URL, out); err != nil {
		return err
	}
	kr, err := cli.Keyring(cfg)
	if err != nil && !errors.Is(err, secretbox.ErrNoKey) {
		return err
	}
	st, err := app.OpenStore(ctx, cfg, app.OwnerDB(cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	svc := &ops.Service{Store: st, Config: cfg}
	if kr == nil {
		n, err := svc.PlaintextSecrets(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintf(out, "secrets: %d still in plain columns; configure a key and run migrate again to seal them (%v)\n", n, secretbox.ErrNoKey)
		}
		return nil
	}
	counts, err := svc.SealPlaintext(ctx)
	if err != nil {
		return err
	}
	total := 0
	for _, c := range counts {
		if c.Sealed > 0 {
			fmt.Fprintf(out, "secrets: %d plain %s sealed under key %s\n", c.Sealed, c.Column, kr.CurrentID())
		}
		total += c.Sealed
	}
	if total == 0 {
		fmt.Fprintln(out, "secrets: none in plain columns")
	}
	filled, err := svc.FillFingerprints(ctx)
	if err != nil {
		return err
	}
	if filled > 0 {
		fmt.Fprintf(out, "secrets: %d display fingerprint(s) computed under key %s\n", filled, kr.CurrentID())
	}
	return nil
}

// migrateSchema applies pending migrations to url, then the team's own
// (the App's WithMigrations, carried by ctx), printing each to out,
// then re-applies the process roles' grants when those roles exist (a
// migration may have added a column an "every column but" grant must cover,
// or a table a role is granted), so no one has to remember `hookinbox db
// roles`.
func migrateSchema(ctx context.Context, url string, out io.Writer) error {
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
	biz := app.BusinessFrom(ctx)
	for _, set := range biz.Migrations {
		n, err := ops.UpSet(ctx, conn, set, func(seq int32, name string) {
			fmt.Fprintf(out, "migrating %s: %04d %s\n", set.Name, seq, name)
		})
		if err != nil {
			return fmt.Errorf("migrations of %s: %w", set.Name, err)
		}
		fmt.Fprintf(out, "migrations of %s: %d applied, up to date\n", set.Name, n)
	}
	roles, stmts, err := ops.ReapplyGrants(ctx, conn, biz.Grants...)
	if err != nil {
		return fmt.Errorf("re-apply role grants: %w", err)
	}
	if len(roles) == 0 {
		fmt.Fprintln(out, "grants: no hookinbox roles yet ('hookinbox db roles' creates them)")
		return nil
	}
	fmt.Fprintf(out, "grants: re-applied for %s (%d statements)\n", strings.Join(roles, ", "), stmts)
	return nil
}
