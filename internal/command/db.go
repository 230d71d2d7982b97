package command

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
)

func newDBCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "Database administration: the processes' roles and their grants",
	}
	cmd.AddCommand(newDBRolesCmd())
	return cmd
}

func newDBRolesCmd() *cobra.Command {
	var o ops.RoleOptions
	var intakePW, workerPW, operatorPW, consolePW, payloadPW string
	cmd := &cobra.Command{
		Use: "roles [--intake-password P] [--worker-password P] [--operator-password P] [--console-password P] " +
			"[--payload-reader-password P] [--nologin]",
		Short: "Create or update the intake, worker, operator, console and payload reader database roles and (re)apply their grants",
		Long: `Create the database roles each process connects as, when missing, and apply their privileges
(internal/store/roles.go, the one list), revoking any other privilege they hold on the schema's
tables. Idempotent: run it again at will. Run it with DATABASE_URL of the schema's owner (the
migrator), after 'hookinbox migrate'; creating a role or setting a password also needs CREATEROLE
(or a superuser). 'hookinbox migrate' re-applies the grants by itself once the roles exist.

  hookinbox_intake          the intake (HOOKINBOX_INTAKE_DATABASE_URL): reads endpoints, signing
                            secrets and account links, never the provider API key; inserts inbox
                            and quarantine rows; never reads a payload back
  hookinbox_worker          the worker (HOOKINBOX_WORKER_DATABASE_URL): handling, outbox, sweeps,
                            reconciliation, backfill, retention; no signing secrets, no audit log
  hookinbox_operator        read-only CLI (HOOKINBOX_OPERATOR_DATABASE_URL): inbox, quarantine and
                            outbox without payloads, status; no API key, no secret, no writes
  hookinbox_console         the console and API (HOOKINBOX_CONSOLE_DATABASE_URL): the operator's reads
                            and its acts' writes; no secret, no token or session hash, no payload
  hookinbox_payload_reader  the payload columns: the console's payload pool logs in as it
                            (HOOKINBOX_PAYLOAD_DATABASE_URL); grant it to an operator who must read them:
                            GRANT hookinbox_payload_reader TO alice;  (alice also IN ROLE hookinbox_operator)

Passwords are optional (trust or certificate authentication needs none), taken from the flags or
HOOKINBOX_INTAKE_DB_PASSWORD, HOOKINBOX_WORKER_DB_PASSWORD, HOOKINBOX_OPERATOR_DB_PASSWORD,
HOOKINBOX_CONSOLE_DB_PASSWORD, HOOKINBOX_PAYLOAD_READER_DB_PASSWORD (prefer the environment:
flags show in the process list). A role given none keeps its password. They are
sent as SCRAM-SHA-256 verifiers, never in the clear, and never printed. With --nologin the process
roles are group roles (NOLOGIN) to grant to login users you manage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			o.Passwords = map[string]string{
				ops.RoleIntake:        orFlag(intakePW, cfg.IntakeDBPassword),
				ops.RoleWorker:        orFlag(workerPW, cfg.WorkerDBPassword),
				ops.RoleOperator:      orFlag(operatorPW, cfg.OperatorDBPassword),
				ops.RoleConsole:       orFlag(consolePW, cfg.ConsoleDBPassword),
				ops.RolePayloadReader: orFlag(payloadPW, cfg.PayloadReaderDBPassword),
			}
			return applyRoles(cmd.Context(), app.OwnerDB(cfg).URL, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&intakePW, "intake-password", "", "password of hookinbox_intake (else HOOKINBOX_INTAKE_DB_PASSWORD)")
	f.StringVar(&workerPW, "worker-password", "", "password of hookinbox_worker (else HOOKINBOX_WORKER_DB_PASSWORD)")
	f.StringVar(&operatorPW, "operator-password", "", "password of hookinbox_operator (else HOOKINBOX_OPERATOR_DB_PASSWORD)")
	f.StringVar(&consolePW, "console-password", "", "password of hookinbox_console (else HOOKINBOX_CONSOLE_DB_PASSWORD)")
	f.StringVar(&payloadPW, "payload-reader-password", "", "password of hookinbox_payload_reader (else HOOKINBOX_PAYLOAD_READER_DB_PASSWORD)")
	f.BoolVar(&o.NoLogin, "nologin", false, "create the process roles NOLOGIN (group roles for your own login users)")
	return cmd
}

func orFlag(flag, env string) string {
	if flag != "" {
		return flag
	}
	return env
}

// applyRoles runs ops.ApplyRoles on url and reports what it did (never a
// password).
func applyRoles(ctx context.Context, url string, o ops.RoleOptions, out io.Writer) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	o.Extra = append(o.Extra, app.BusinessFrom(ctx).Grants...) // the team's own tables
	changes, n, err := ops.ApplyRoles(ctx, conn, o)
	if err != nil {
		return err
	}
	for _, c := range changes {
		var notes []string
		if c.Login {
			notes = append(notes, "LOGIN")
		} else {
			notes = append(notes, "NOLOGIN")
		}
		if c.PasswordSet {
			notes = append(notes, "password set")
		}
		fmt.Fprintf(out, "role %s: %s (%s)\n", c.Role, c.Action, strings.Join(notes, ", "))
	}
	fmt.Fprintf(out, "grants: applied (%d statements)\n", n)
	return nil
}
