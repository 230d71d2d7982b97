package command

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/starter"
)

// The operator commands are thin: they read flags, call package ops (the
// same implementation the operator API uses) and print what it returns.

// opsEnv is what an operator command runs with.
type opsEnv struct {
	svc    *ops.Service
	out    io.Writer
	errOut io.Writer
	// in is where `replay -` reads event keys.
	in io.Reader
}

// withOps opens the store and a lazy Temporal client (it connects on first
// signal, so a dry run or a refusal never waits on Temporal).
func withOps(cmd *cobra.Command, fn func(env opsEnv) error) error {
	return withStoreOps(cmd, func(env opsEnv) error {
		c, err := starter.DialLazy(env.svc.Config, quietLogger(cmd))
		if err != nil {
			return err
		}
		defer c.Close()
		env.svc.Doorbell, env.svc.Temporal, env.svc.SignalTimeout = app.Resources(env.svc.Config, c), c, 10*time.Second
		return fn(env)
	})
}

// withStoreOps runs fn with the operator acts on a store opened on
// DATABASE_URL (the schema owner's: the commands that write), for the acts
// that signal nothing (no Temporal client).
func withStoreOps(cmd *cobra.Command, fn func(env opsEnv) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	st, err := app.OpenStore(cmd.Context(), cfg, app.OwnerDB(cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	biz := app.BusinessFrom(cmd.Context())
	svc := &ops.Service{Store: st, Routes: biz.Router(cfg, st, nil), Handled: biz.Routes, Config: cfg}
	return fn(opsEnv{svc: svc, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), in: cmd.InOrStdin()})
}

// asUsage turns ops' bad-input errors into usage errors (exit status 2).
func asUsage(err error) error {
	if ops.IsInvalid(err) {
		return cli.UsageError{Msg: err.Error()}
	}
	return err
}

// defaultActor is who an audited act is attributed to without --by: the
// login name, else "unknown".
func defaultActor() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}

// warnDoorbells prints a doorbell round's warning, if any.
func warnDoorbells(errOut io.Writer, warning string) {
	if warning != "" {
		fmt.Fprintln(errOut, "warning: "+warning)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

// fmtAge is ops.FormatAge, with a negative duration (clock skew) shown as 0s.
func fmtAge(d time.Duration) string { return ops.FormatAge(max(d, 0)) }

func fmtRelative(now, t time.Time) string {
	if t.After(now) {
		return "in " + fmtAge(t.Sub(now))
	}
	return "due " + fmtAge(now.Sub(t)) + " ago"
}

// oneLine flattens s to one line and, when limit > 0, shortens it to limit runes.
func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); limit > 0 && len(r) > limit {
		return string(r[:limit-1]) + "…"
	}
	return s
}

func truncate(s string, n int) string { return oneLine(s, n) }

// ageFlag is a duration flag that also accepts whole days ("7d").
type ageFlag time.Duration

func (a *ageFlag) String() string {
	if *a == 0 {
		return ""
	}
	return time.Duration(*a).String()
}
func (a *ageFlag) Type() string { return "duration" }
func (a *ageFlag) Set(s string) error {
	d, err := parseAge(s)
	if err != nil {
		return err
	}
	*a = ageFlag(d)
	return nil
}

// parseAge parses a Go duration or a whole number of days ("7d").
func parseAge(s string) (time.Duration, error) { return ops.ParseAge(s) }

// timeFlag is an RFC 3339 time (or a date) flag.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.UTC().Format(time.RFC3339)
}
func (f *timeFlag) Type() string { return "time" }
func (f *timeFlag) Set(s string) error {
	t, err := parseTime(s)
	if err != nil {
		return err
	}
	f.t = t
	return nil
}

// parseTime accepts RFC 3339 (2026-05-01T10:00:00Z) or a date (2026-05-01, UTC).
func parseTime(s string) (time.Time, error) { return ops.ParseTime(s) }

// inboxFilterFlags are the filters `inbox list` and `replay` share.
type inboxFilterFlags struct {
	statuses             []string
	provider, account    string
	workspace, eventType string
	resource, endpoint   string
	olderThan, since     ageFlag
	from, to             timeFlag
	limit                int
}

// filterFlagNames are the flags that select events (not --limit).
var filterFlagNames = []string{"status", "provider", "account", "workspace", "type", "resource", "endpoint", "older-than", "since", "from", "to"}

func (o *inboxFilterFlags) register(cmd *cobra.Command, limit int, limitHelp string) {
	f := cmd.Flags()
	f.StringSliceVar(&o.statuses, "status", nil, "pending, done, ignored, failed or exhausted (repeatable or comma-separated)")
	f.StringVar(&o.provider, "provider", "", "stripe, github, standard or shopify")
	f.StringVar(&o.account, "account", "", "source account")
	f.StringVar(&o.workspace, "workspace", "", "workspace id")
	f.StringVar(&o.eventType, "type", "", "event type, e.g. invoice.paid")
	f.StringVar(&o.resource, "resource", "", "resource as KIND/ID (invoice/in_1) or just its ID")
	f.StringVar(&o.endpoint, "endpoint", "", "endpoint slug")
	f.Var(&o.olderThan, "older-than", "received more than this long ago (e.g. 30m, 2h, 7d)")
	f.Var(&o.since, "since", "received within this long (e.g. 30m, 2h, 7d)")
	f.Var(&o.from, "from", "received at or after this time (RFC 3339 or a date)")
	f.Var(&o.to, "to", "received before this time (RFC 3339 or a date)")
	f.IntVar(&o.limit, "limit", limit, limitHelp)
}

func (o *inboxFilterFlags) filter() ops.InboxFilter {
	return ops.InboxFilter{Statuses: o.statuses, Provider: o.provider, Account: o.account, Workspace: o.workspace,
		EventType: o.eventType, Resource: o.resource, Endpoint: o.endpoint, OlderThan: time.Duration(o.olderThan),
		Since: time.Duration(o.since), From: o.from.t, To: o.to.t, Limit: o.limit}
}

// changed reports whether any selecting flag was given.
func (o *inboxFilterFlags) changed(cmd *cobra.Command) (string, bool) {
	for _, n := range filterFlagNames {
		if cmd.Flags().Changed(n) {
			return n, true
		}
	}
	return "", false
}

// withReadOps is withOps for the read-only commands (inbox, quarantine and
// outbox list|show, status): the store is opened on the operator's
// read-only URL (HOOKINBOX_OPERATOR_DATABASE_URL, else DATABASE_URL), and
// nothing is signalled. A permission error says which role is missing.
func withReadOps(cmd *cobra.Command, fn func(env opsEnv) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	st, err := app.OpenStore(cmd.Context(), cfg, app.OperatorDB(cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	biz := app.BusinessFrom(cmd.Context())
	svc := &ops.Service{Store: st, Routes: biz.Router(cfg, st, nil), Handled: biz.Routes, Config: cfg}
	if err := fn(opsEnv{svc: svc, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), in: cmd.InOrStdin()}); ops.IsPermissionDenied(err) {
		return fmt.Errorf("%w (the operator's database role lacks this privilege: it should be %s, and payloads need %s "+
			"granted to it as well, e.g. GRANT %s TO alice; see 'hookinbox db roles --help')",
			err, ops.RoleOperator, ops.RolePayloadReader, ops.RolePayloadReader)
	} else if err != nil {
		return err
	}
	return nil
}
