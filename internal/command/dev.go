package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/starter"
)

func newDevCmd() *cobra.Command {
	var servicesOnly, toolsOnly bool
	var temporalNice int
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole stack locally: PostgreSQL, Temporal dev server + UI, Mailpit, intake, worker, console",
		Long: `Run the embedded local stack (what 'make run' does). On first use it builds the pinned Temporal
CLI and Mailpit once per machine into the user's cache (HOOKINBOX_CACHE_DIR, default
~/.cache/hookinbox/tools; in a hookinbox checkout, its .tools/; HOOKINBOX_TEMPORAL_BIN and
HOOKINBOX_MAILPIT_BIN use binaries of your own), a few minutes with progress shown, and creates a
PostgreSQL cluster under .data/pg (as the postgres user when run as root) and a secrets key in
.data/secrets.key (unless HOOKINBOX_SECRETS_KEY or _FILE is set). .data/ is in the folder of the
working directory's module (your team's module, or this repository). It reuses services
already listening on their ports, applies migrations, creates the database roles ('hookinbox db
roles'), then runs the intake (as hookinbox_intake), the worker (as hookinbox_worker) and the
console (as hookinbox_console, payloads as hookinbox_payload_reader) in this process. Ctrl-C stops
everything it started.

Everything listens on 127.0.0.1 only: PostgreSQL 55432, Temporal 7233 (UI 8233), Mailpit
SMTP 1025 (UI 8025), the intake's public port HOOKINBOX_HTTP_ADDR (here 127.0.0.1:8080), its
internal listener HOOKINBOX_INTERNAL_ADDR (/metrics, /readyz; 127.0.0.1:9090) and the worker's
HOOKINBOX_WORKER_ADDR (/metrics;
127.0.0.1:9091) and the operator console and API HOOKINBOX_CONSOLE_ADDR (127.0.0.1:9092). DATABASE_URL, the HOOKINBOX_*_DATABASE_URL variables and
TEMPORAL_ADDRESS are ignored here: the stack is local by definition.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if toolsOnly {
				return buildTools(cmd.Context(), cmd.OutOrStdout())
			}
			prog := ".tools/bin/hookinbox" // make build's binary, beside make run
			if n := cmd.Root().Name(); n != "hookinbox" {
				prog = n // a team's program
			}
			return runDev(cmd.Context(), cmd.OutOrStdout(), prog, servicesOnly, temporalNice)
		},
	}
	cmd.Flags().BoolVar(&toolsOnly, "tools-only", false, "only build the pinned tools (and fetch the tests' pinned corpora) into .tools/ (make tools; in a hookinbox checkout)")
	cmd.Flags().BoolVar(&servicesOnly, "services-only", false, "start PostgreSQL, Temporal and Mailpit only (run intake and worker yourself)")
	cmd.Flags().IntVar(&temporalNice, "temporal-nice", devenv.DefaultTemporalNice,
		"CPU niceness of the Temporal dev server (0: as this process): on one machine the intake's acknowledgements get the CPU first")
	return cmd
}

// localStack is what runDev started, stopped in reverse order.
type localStack struct {
	pg       *devenv.Postgres
	temporal *devenv.Temporal
	mailpit  *devenv.Mailpit
	logs     []io.Closer
}

func (s *localStack) stop(out io.Writer) {
	if s.mailpit != nil && s.mailpit.Started() {
		fmt.Fprintln(out, "stopping mailpit")
		_ = s.mailpit.Stop()
	}
	if s.temporal != nil && s.temporal.Started() {
		fmt.Fprintln(out, "stopping temporal dev server")
		_ = s.temporal.Stop()
	}
	if s.pg != nil && s.pg.Started() {
		fmt.Fprintln(out, "stopping postgres")
		_ = s.pg.Stop()
	}
	for _, l := range s.logs {
		l.Close()
	}
}

func (s *localStack) logFile(dir, name string) (io.Writer, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	s.logs = append(s.logs, f)
	return f, nil
}

func buildTools(ctx context.Context, out io.Writer) error {
	root, err := devenv.FindRoot()
	if err != nil {
		return err
	}
	for _, t := range []devenv.Tool{devenv.TemporalCLI, devenv.MailpitTool, devenv.StripeMock, devenv.Amtool} {
		p, err := t.Ensure(ctx, root, out)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s\n", t.Name, p)
	}
	// The tests' corpora. Outside CI a missing npm only skips the test that
	// reads the corpus; under CI it fails here, as the test would.
	for _, p := range []devenv.NPMPackage{devenv.OctokitWebhooks} {
		dir, err := p.Ensure(ctx, root, out)
		if err != nil && devenv.CI() {
			return err
		}
		if err != nil {
			fmt.Fprintf(out, "note: %s unavailable (its corpus test will skip): %v\n", p.Package, err)
			continue
		}
		fmt.Fprintf(out, "%s: %s\n", p.Name, dir)
	}
	return nil
}

// localStackHTTPAddr is the intake's public port under `make run`: the
// usual 8080, on loopback only (the local stack is not a server).
var localStackHTTPAddr = fmt.Sprintf("127.0.0.1:%d", config.DefaultIntakePort)

// localConfig is the configuration of the local stack: the environment,
// with the services pinned to the ones runDev starts and every listener of
// hookinbox on loopback unless the environment names another address.
func localConfig(lookup func(string) (string, bool)) (config.Config, error) {
	cfg, err := config.FromLookup(lookup)
	if err != nil {
		return cfg, err
	}
	set := func(name string) bool { v, ok := lookup(name); return ok && v != "" }
	def := config.Default()
	cfg.DatabaseURL, cfg.TemporalAddress, cfg.TemporalNamespace = def.DatabaseURL, def.TemporalAddress, def.TemporalNamespace
	cfg.IntakeDatabaseURL, cfg.WorkerDatabaseURL, cfg.OperatorDatabaseURL = "", "", "" // set once the roles exist
	cfg.ConsoleDatabaseURL, cfg.PayloadDatabaseURL = "", ""
	cfg.TemporalAPIKey, cfg.TemporalTLS, cfg.TemporalTLSCert, cfg.TemporalTLSKey, cfg.TemporalTLSCA = "", false, "", "", ""
	cfg.Mailer, cfg.SMTPAddr = "smtp", fmt.Sprintf("127.0.0.1:%d", config.DefaultMailpitSMTP)
	cfg.SMTPLookupURL = fmt.Sprintf("http://127.0.0.1:%d", config.DefaultMailpitHTTP)
	if !set("HOOKINBOX_HTTP_ADDR") {
		cfg.HTTPAddr = localStackHTTPAddr
	}
	if !set("HOOKINBOX_LOG_FORMAT") {
		cfg.LogFormat = "text"
	}
	if !set("HOOKINBOX_OUTBOUND_ALLOW_PRIVATE") {
		cfg.OutboundAllowPrivate = true // every destination of the local stack is on loopback
	}
	return cfg, cfg.Validate()
}

// localRoles points each part of the local stack at its own role on pg
// (trust authentication on loopback: no passwords).
func localRoles(cfg *config.Config, pg *devenv.Postgres) {
	cfg.IntakeDatabaseURL = pg.URL(ops.RoleIntake, "hookinbox")
	cfg.WorkerDatabaseURL = pg.URL(ops.RoleWorker, "hookinbox")
	cfg.OperatorDatabaseURL = pg.URL(ops.RoleOperator, "hookinbox")
	cfg.ConsoleDatabaseURL = pg.URL(ops.RoleConsole, "hookinbox")
	cfg.PayloadDatabaseURL = pg.URL(ops.RolePayloadReader, "hookinbox")
}

// runDev runs the local stack; prog is how its banner names the program
// (for the operator commands it suggests).
func runDev(ctx context.Context, out io.Writer, prog string, servicesOnly bool, temporalNice int) (err error) {
	// The state lives in the team's own module folder (or this
	// repository's), never in the module hookinbox is read from.
	root, err := devenv.ProjectDir()
	if err != nil {
		return err
	}
	cfg, err := localConfig(os.LookupEnv)
	if err != nil {
		return err
	}
	data := devenv.DataDir(root)
	logDir := filepath.Join(data, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}

	// The two binaries the stack runs: the user's own, this checkout's
	// .tools/, or built once per machine into the user's cache.
	temporalBin, err := devenv.TemporalCLI.Binary(ctx, out)
	if err != nil {
		return err
	}
	mailpitBin, err := devenv.MailpitTool.Binary(ctx, out)
	if err != nil {
		return err
	}

	s := &localStack{}
	defer func() { s.stop(out) }()

	pgLog, err := s.logFile(logDir, "postgres.log")
	if err != nil {
		return err
	}
	if s.pg, err = devenv.StartPostgres(ctx, devenv.PostgresOptions{
		Dir: filepath.Join(data, "pg"), Port: config.DefaultPostgresPort, Log: pgLog, Progress: out,
	}); err != nil {
		return err
	}
	if err := s.pg.EnsureDatabase(ctx, "hookinbox", "hookinbox"); err != nil {
		return err
	}
	if cfg.SecretsKey == "" && cfg.SecretsKeyFile == "" {
		// The local stack's key: made once, kept beside its database.
		path, created, err := devenv.EnsureSecretsKey(root)
		if err != nil {
			return err
		}
		if created {
			fmt.Fprintf(out, "secrets key: created %s (0600); the database's secrets are sealed with it\n", path)
		}
		cfg.SecretsKeyFile = path
	}
	if err := migrate(ctx, cfg, out); err != nil {
		return err
	}
	// The processes' roles (trust authentication on loopback: no
	// passwords), created as the cluster's superuser since the migrator has
	// no CREATEROLE; the intake and the worker connect as theirs.
	if err := applyRoles(ctx, s.pg.AdminURL("hookinbox"), ops.RoleOptions{}, out); err != nil {
		return err
	}
	localRoles(&cfg, s.pg)

	tLog, err := s.logFile(logDir, "temporal.log")
	if err != nil {
		return err
	}
	if s.temporal, err = devenv.StartTemporal(ctx, devenv.TemporalOptions{
		Binary: temporalBin, DBFile: filepath.Join(data, "temporal.db"),
		Port: config.DefaultTemporalPort, UIPort: config.DefaultTemporalUI, Nice: temporalNice,
		SearchAttributes: starter.SearchAttributeTypes(), Log: tLog, Progress: out,
	}); err != nil {
		return err
	}
	if s.temporal.UIURL == "" {
		s.temporal.UIURL = fmt.Sprintf("http://127.0.0.1:%d", config.DefaultTemporalUI)
	}
	if err := setRetention(ctx, s.temporal.Address, cfg.TemporalNamespace, DevRetention); err != nil {
		// Not fatal: the stack works, the server keeps closed runs longer.
		fmt.Fprintf(out, "temporal: %v (closed workflows stay 24 h)\n", err)
	} else {
		fmt.Fprintf(out, "temporal: namespace %s keeps closed workflows %s (the inbox and the lineage keep their story)\n",
			cfg.TemporalNamespace, DevRetention)
	}

	mLog, err := s.logFile(logDir, "mailpit.log")
	if err != nil {
		return err
	}
	if s.mailpit, err = devenv.StartMailpit(ctx, devenv.MailpitOptions{
		Binary: mailpitBin, SMTPPort: config.DefaultMailpitSMTP, HTTPPort: config.DefaultMailpitHTTP,
		DBFile: filepath.Join(data, "mailpit.db"), Log: mLog, Progress: out,
	}); err != nil {
		return err
	}

	intakeURL := "http://" + app.DisplayAddr(cfg.HTTPAddr)
	internalURL := "http://" + app.DisplayAddr(cfg.InternalAddr)
	fmt.Fprintf(out, strings.ReplaceAll(`
hookinbox local stack is up
  intake          %s/webhooks/<endpoint>   (health %s/healthz)
  internal        %s/metrics   %s/readyz   (intake; not on the public port)
  worker metrics  http://%s/metrics
  console         %s   (API %s/api/openapi.json)
  temporal        %s   UI %s
  mailpit         SMTP %s   UI %s
  postgres        %s   (owner; migrations)
                  intake %s
                  worker %s
                  console %s
                  console payloads %s
                  operator (read-only CLI: HOOKINBOX_OPERATOR_DATABASE_URL) %s
  logs            %s

Register an endpoint:  export DEMO_SECRET=whsec_$(head -c 32 /dev/urandom | base64 | tr -d '/+=')
                       {prog} endpoints add --slug demo --provider stripe --environment test --secret-env DEMO_SECRET
                       {prog} endpoints link --slug demo --account acct_demo --workspace ws_demo
Operator console:      {prog} tokens create --role admin --name YOU   (then sign in with it)
Secrets are sealed with %s (operator commands on the local stack find it by themselves).
Press Ctrl-C to stop everything started here.
`, "{prog}", prog), intakeURL, intakeURL, internalURL, internalURL, app.DisplayAddr(cfg.WorkerAddr), cfg.ConsoleBaseURL(), cfg.ConsoleBaseURL(),
		s.temporal.Address, s.temporal.UIURL, s.mailpit.SMTPAddr, s.mailpit.HTTPURL, cfg.DatabaseURL, cfg.IntakeDB(), cfg.WorkerDB(),
		cfg.ConsoleDB(), cfg.PayloadDB(), cfg.OperatorDB(), logDir, orDefault(cfg.SecretsKeyFile, "HOOKINBOX_SECRETS_KEY"))

	if servicesOnly {
		<-ctx.Done()
		fmt.Fprintln(out, "\nshutting down")
		return nil
	}

	// One process, each part as its own database role: the worker's store,
	// the intake's, and the console's with its payload pool (as `hookinbox
	// console` runs it).
	p, err := app.OpenProcess(ctx, cfg, app.WorkerDB(cfg), false)
	if err != nil {
		return err
	}
	defer p.Close()
	intakeSt, err := app.OpenStore(ctx, cfg, app.IntakeDB(cfg))
	if err != nil {
		return err
	}
	defer intakeSt.Close()
	consoleSt, err := app.OpenStore(ctx, cfg, app.ConsoleDB(cfg))
	if err != nil {
		return err
	}
	defer consoleSt.Close()
	payloadSt, err := app.OpenStore(ctx, cfg, app.PayloadDB(cfg))
	if err != nil {
		return err
	}
	defer payloadSt.Close()
	st, c, m, log := p.Store, p.Temporal, p.Metrics, p.Log
	biz := app.BusinessFrom(ctx)
	acts, err := app.NewActivities(cfg, st, c, m, log.With("process", "worker"), biz)
	if err != nil {
		return err
	}
	con, err := app.NewConsole(cfg, consoleSt, payloadSt, c, log.With("process", "console"), biz)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(3)
	go func() {
		defer wg.Done()
		errc <- app.RunConsole(runCtx, con, cfg.ConsoleAddr, nil, log)
	}()
	go func() {
		defer wg.Done()
		errc <- app.NewIntake(cfg, intakeSt, c, m, log.With("process", "intake"), biz.Router(cfg, intakeSt, log)).Run(runCtx, cfg.HTTPAddr, nil, log)
	}()
	go func() {
		defer wg.Done()
		errc <- app.RunWorker(runCtx, cfg, c, acts, m, cfg.WorkerAddr, log)
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nshutting down")
	case err = <-errc:
		if err != nil {
			err = fmt.Errorf("local stack: %w", err)
		}
	}
	cancel()
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
