package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/command"
	"github.com/hookinbox/hookinbox/internal/engine"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/migrations"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all" // the built-in providers
)

// App is one hookinbox program: the handlers a team registered, its
// migrations and providers. Every process runs from it (Main): the intake,
// the worker, the console, migrate, the local dev stack and the operator
// CLI, so they all agree on which events are handled and where.
//
// Register everything before Main. Registration mistakes (a type taken
// twice, a bad option) are collected and reported by Main, Run and Err.
type App struct {
	routes      routes.Table
	handlers    map[string]*registered
	reconcilers map[string]Reconciler
	lister      engine.Lister
	policies    map[string]string
	migrations  []migrations.Set
	grants      []store.Grant
	errs        []error
}

type registered struct {
	h         Handler
	waitLimit time.Duration
}

// Option configures an App at New.
type Option func(*App)

// New returns an App with options applied.
func New(opts ...Option) *App {
	a := &App{handlers: map[string]*registered{}, reconcilers: map[string]Reconciler{}, policies: map[string]string{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// WithProvider registers a provider of the team's own (see package
// providers: Provider, and a Clients implementation to fetch from its API;
// docs/adding-a-provider.md). Providers are registered once per process:
// the same provider value again (a second App of the program, as each test
// builds one) is no mistake, another provider under a taken name is.
func WithProvider(p providers.Provider) Option {
	return func(a *App) {
		if p == nil || p.Name() == "" {
			a.fail(errors.New("WithProvider: a provider needs a name"))
			return
		}
		registerOnce.Lock()
		defer registerOnce.Unlock()
		if prev, taken := providers.Lookup(p.Name()); taken {
			if !sameValue(prev, p) {
				a.fail(fmt.Errorf("WithProvider: provider %q is already registered", p.Name()))
			}
			return
		}
		providers.Register(p)
	}
}

// registerOnce makes WithProvider's lookup and registration one step, for
// Apps built at once (parallel tests).
var registerOnce sync.Mutex

// Table declares one of the team's own tables and what hookinbox's process
// roles may do with it, so least privilege covers it too: the worker (where
// handlers run) gets Worker, the read-only operator role may SELECT it
// unless OperatorHidden, and never its Private columns (personal data:
// only the payload reader role reads those). The console's role is
// granted nothing on it.
type Table struct {
	Name string
	// Worker lists the worker's privileges: SELECT, INSERT, UPDATE, DELETE.
	Worker []string
	// OperatorHidden keeps the table from the operator role altogether.
	OperatorHidden bool
	// Private columns are hidden from the operator role.
	Private []string
}

// WithMigrations adds the team's own migrations: numbered files at the root
// of fsys (0001_name.sql, tern's format, as hookinbox's own) applied after
// hookinbox's by `migrate` and the dev stack, in a version table of their
// own (public.schema_version_<name>). tables declares the tables they
// create and their grants.
func WithMigrations(name string, fsys fs.FS, tables ...Table) Option {
	return func(a *App) {
		set := migrations.Set{Name: name, FS: fsys}
		if fsys == nil {
			a.fail(fmt.Errorf("WithMigrations(%q): no files", name))
			return
		}
		if sqls, err := fs.Glob(fsys, "*.sql"); err != nil || len(sqls) == 0 {
			a.fail(fmt.Errorf("WithMigrations(%q): no .sql file at the root of the files (an embed.FS of a folder wants fs.Sub(files, \"migrations\"))", name))
			return
		}
		for _, s := range a.migrations {
			if s.Name == name {
				a.fail(fmt.Errorf("WithMigrations(%q): that set is already added", name))
				return
			}
		}
		a.migrations = append(a.migrations, set)
		for _, t := range tables {
			if err := a.addTable(t); err != nil {
				a.fail(fmt.Errorf("WithMigrations(%q): %w", name, err))
			}
		}
	}
}

func (a *App) addTable(t Table) error {
	if t.Name == "" {
		return errors.New("a table needs a name")
	}
	for _, p := range t.Worker {
		p = strings.ToUpper(strings.TrimSpace(p))
		if !slices.Contains([]string{"SELECT", "INSERT", "UPDATE", "DELETE"}, p) {
			return fmt.Errorf("table %s: worker privilege %q is not SELECT, INSERT, UPDATE or DELETE", t.Name, p)
		}
		a.grants = append(a.grants, store.Grant{Role: store.RoleWorker, Privilege: p, Table: t.Name})
	}
	if !t.OperatorHidden {
		a.grants = append(a.grants, store.Grant{Role: store.RoleOperator, Privilege: "SELECT", Table: t.Name, Except: t.Private})
	}
	if len(t.Private) > 0 {
		a.grants = append(a.grants, store.Grant{Role: store.RolePayloadReader, Privilege: "SELECT", Table: t.Name, Columns: t.Private})
	}
	return nil
}

// HandleOption configures one Handle registration.
type HandleOption func(*handleOptions)

type handleOptions struct {
	name      string
	resource  *routes.ResourceRule
	budget    int
	waitLimit time.Duration
}

// Name names the handler: its metrics label and the route the inbox rows
// of its types are handled by. Register several types under one name to
// share one handler (the default is "provider:eventType").
func Name(name string) HandleOption { return func(o *handleOptions) { o.name = name } }

// SerializeOn runs the event in the workflow of another resource than the
// one the provider normalized: kind, with its id read from the verified
// payload at idPath (gjson syntax, e.g. "data.object.invoice"). Events that
// must never race (a credit note and the grant of the invoice it credits)
// serialize on the same resource. The normalized object's id is kept as
// Event.ObjectID.
func SerializeOn(kind, idPath string) HandleOption {
	return func(o *handleOptions) { o.resource = &routes.ResourceRule{Kind: kind, IDPath: idPath} }
}

// RetryBudget is the number of attempts before an event of this handler
// ends exhausted (default: HOOKINBOX_RETRY_BUDGET, 10).
func RetryBudget(attempts int) HandleOption { return func(o *handleOptions) { o.budget = attempts } }

// WaitLimit is how long after its receipt an event may Wait for another
// fact before the wait counts as a failure (default 24h).
func WaitLimit(d time.Duration) HandleOption { return func(o *handleOptions) { o.waitLimit = d } }

// Handle registers h for a provider's event type: an exact type, or a
// prefix ending in "*" ("customer.subscription.*"). The intake then records
// events of that type pending (not ignored), and the worker runs h on each,
// one at a time per resource. A type may be handled once.
func (a *App) Handle(provider, eventType string, h Handler, opts ...HandleOption) {
	var o handleOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.name == "" {
		o.name = provider + ":" + eventType
	}
	if h == nil {
		a.fail(fmt.Errorf("Handle(%s, %s): no handler", provider, eventType))
		return
	}
	if _, ok := providers.Lookup(provider); !ok {
		a.fail(fmt.Errorf("Handle(%s, %s): %w %q (register it WithProvider)", provider, eventType, providers.ErrUnknown, provider))
		return
	}
	if prev, ok := a.handlers[o.name]; ok && !sameValue(prev.h, h) {
		a.fail(fmt.Errorf("Handle(%s, %s): the name %q is taken by another handler", provider, eventType, o.name))
		return
	}
	if o.waitLimit < 0 {
		a.fail(fmt.Errorf("Handle(%s, %s): a wait limit is positive", provider, eventType))
		return
	}
	err := a.routes.Add(routes.Route{Name: o.name, Provider: provider, Type: eventType, Resource: o.resource, Budget: o.budget})
	if err != nil {
		a.fail(fmt.Errorf("Handle(%s, %s): %w", provider, eventType, err))
		return
	}
	r := a.handlers[o.name]
	if r == nil {
		r = &registered{h: h}
		a.handlers[o.name] = r
	}
	if o.waitLimit > 0 {
		r.waitLimit = o.waitLimit
	}
}

// HandleFunc registers f as Handle does.
func (a *App) HandleFunc(provider, eventType string, f HandlerFunc, opts ...HandleOption) {
	a.Handle(provider, eventType, f, opts...)
}

// sameValue reports whether a and b are the same value: of a handler
// (funcs are never comparable, so two registrations of a HandlerFunc under
// one name are refused) or of a provider (stateless values). A value that
// is not comparable is never the same.
func sameValue(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// Reconcile registers r for a resource kind: the reconciliation schedule
// and `hookinbox reconcile` ask it to compare a resource of that kind with
// the provider, inside the resource's own workflow (never racing its
// events). A kind may be reconciled by one Reconciler.
func (a *App) Reconcile(kind string, r Reconciler) {
	if kind == "" || r == nil {
		a.fail(errors.New("Reconcile: a kind and a reconciler are required"))
		return
	}
	if _, taken := a.reconcilers[kind]; taken {
		a.fail(fmt.Errorf("Reconcile(%s): that kind is already reconciled", kind))
		return
	}
	a.reconcilers[kind] = r
	if l, ok := r.(SubscriptionLister); ok {
		if a.lister != nil {
			a.fail(fmt.Errorf("Reconcile(%s): only one reconciler compares the subscriptions listing", kind))
			return
		}
		a.lister = listerAdapter{l}
	}
}

// Uncertain is what a send of an outbox class does when a previous
// attempt's outcome is unknown (its answer was lost, or the worker died
// between the destination accepting and the row being marked sent), where
// the destination does not dedupe on the operation key itself.
type Uncertain string

// The policies.
const (
	// AcceptDuplicate sends again: a duplicate is accepted (low-risk
	// messages: a confirmation, a welcome email).
	AcceptDuplicate Uncertain = "accept_duplicate"
	// HoldForReview stops and waits for an operator (`hookinbox outbox
	// release ID`): high-impact actions. A class no handler declared is
	// held for review.
	HoldForReview Uncertain = "hold_for_review"
)

// OutboxClass declares an outbox class the handlers send (Intent.Class) and
// its uncertain-outcome policy; HOOKINBOX_UNCERTAIN_POLICY=class=policy
// overrides it per deployment.
func (a *App) OutboxClass(class string, onUncertain Uncertain) {
	switch {
	case strings.TrimSpace(class) == "":
		a.fail(errors.New("OutboxClass: a class name is required"))
	case onUncertain != AcceptDuplicate && onUncertain != HoldForReview:
		a.fail(fmt.Errorf("OutboxClass(%s): the policy is AcceptDuplicate or HoldForReview, not %q", class, onUncertain))
	case a.policies[class] != "" && a.policies[class] != string(onUncertain):
		a.fail(fmt.Errorf("OutboxClass(%s): declared twice with different policies", class))
	default:
		a.policies[class] = string(onUncertain)
	}
}

func (a *App) fail(err error) { a.errs = append(a.errs, err) }

// Err reports the registration mistakes so far, joined (nil: none).
func (a *App) Err() error { return errors.Join(a.errs...) }

// Main runs the command line the process was started with (os.Args) and
// exits with its status: `webhook`, `worker`, `console`, `dev`, `migrate`
// and every operator command (`endpoints`, `inbox`, `replay`, …; `--help`
// lists them). Configuration comes from the environment (see README).
func (a *App) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := a.Run(ctx, os.Args[1:]...)
	stop()
	os.Exit(code)
}

// Run runs one command line (args without the program name) and returns
// its exit status: 0, 1 on an error, 2 on bad usage or a registration
// mistake (printed to stderr).
func (a *App) Run(ctx context.Context, args ...string) int {
	if err := a.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "error: hookinbox app:", err)
		return 2
	}
	root := command.NewRootCmd()
	root.SetArgs(args)
	return cli.Run(app.WithBusiness(ctx, a.business()), root, os.Stderr)
}

// business is what the processes are built from.
func (a *App) business() app.Business {
	b := app.Business{
		Routes: &a.routes, Handlers: engine.Set{}, WaitLimits: map[string]time.Duration{},
		Reconcilers: map[string]engine.Reconciler{}, Projections: a.lister,
		Migrations: slices.Clone(a.migrations), Grants: slices.Clone(a.grants), Policies: maps.Clone(a.policies),
		Forwarder: newForwarder,
	}
	for name, r := range a.handlers {
		b.Handlers[name] = adapter{h: r.h}
		if r.waitLimit > 0 {
			b.WaitLimits[name] = r.waitLimit
		}
	}
	for kind, r := range a.reconcilers {
		b.Reconcilers[kind] = reconcileAdapter{r}
	}
	return b
}

func init() {
	app.BusinessOf = func(v any) app.Business { return v.(*App).business() }
	app.HandlerOf = func(h any) engine.Handler { return adapter{h: h.(Handler)} }
}
