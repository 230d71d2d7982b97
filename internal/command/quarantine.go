package command

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// The operator's quarantine commands: authenticated deliveries the intake
// kept out of the inbox (unknown account, malformed body, environment
// mismatch, same event key with another body), and their resolution.

func newQuarantineCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "Inspect and resolve deliveries kept out of the inbox (unknown account, malformed, conflicts)",
		Long: `The quarantine holds authenticated deliveries the intake would not put in the inbox as they
were: unknown_account (the source account is not linked to a workspace), malformed (the body
cannot be used), environment_mismatch (a live event on a test endpoint or the reverse),
conflicting_duplicate (an event key already accepted with a different body; the original is
kept) and account_mismatch (the secret that signed it, or the endpoint, is not bound to the
account it claims: possibly another tenant's forgery). Resolve each entry by re-admitting it (after fixing the cause, e.g. linking the account)
or discarding it; both are audited. See docs/operations.md.`,
	}
	cmd.AddCommand(newQuarantineListCmd(), newQuarantineShowCmd(), newQuarantineResolveCmd())
	return cmd
}

type quarantineListOptions struct {
	filter ops.QuarantineFilter
	format cli.OutputFormat
}

func newQuarantineListCmd() *cobra.Command {
	o := quarantineListOptions{format: "table"}
	var all bool
	cmd := &cobra.Command{
		Use:   "list [--reason R] [--endpoint SLUG] [--all]",
		Short: "List quarantine entries, newest first (open ones unless --all; never payloads)",
		Example: `  hookinbox quarantine list
  hookinbox quarantine list --reason unknown_account --endpoint stripe-live
  hookinbox quarantine list --all --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				o.filter.OpenOnly = false
			}
			if err := ops.ValidateQuarantineFilter(o.filter); err != nil {
				return asUsage(err)
			}
			return withReadOps(cmd, func(env opsEnv) error { return runQuarantineList(cmd.Context(), env, o) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.filter.Reason, "reason", "", strings.Join(ops.QuarantineReasons, ", "))
	f.StringVar(&o.filter.Endpoint, "endpoint", "", "endpoint slug")
	f.BoolVar(&o.filter.OpenOnly, "open", true, "only entries not yet resolved")
	f.BoolVar(&all, "all", false, "resolved entries too (same as --open=false)")
	f.IntVar(&o.filter.Limit, "limit", 50, "at most this many entries")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

// quarantineEvent names what the entry is about: its event key, else its
// event id, else nothing known.
func quarantineEvent(q ops.QuarantineView) string {
	if q.EventKey != "" {
		return q.EventKey
	}
	return orDash(q.EventID)
}

func quarantineState(q ops.QuarantineView) string {
	if q.ResolvedAt == nil {
		return "open"
	}
	return "resolved by " + q.ResolvedBy + " at " + fmtTime(*q.ResolvedAt)
}

func runQuarantineList(ctx context.Context, env opsEnv, o quarantineListOptions) error {
	qs, err := env.svc.ListQuarantine(ctx, o.filter)
	if err != nil {
		return asUsage(err)
	}
	rows := make([][]string, 0, len(qs))
	now := time.Now()
	for _, q := range qs {
		rows = append(rows, []string{strconv.FormatInt(q.ID, 10), fmtTime(q.ReceivedAt), fmtAge(now.Sub(q.ReceivedAt)),
			q.Endpoint, q.Reason, quarantineEvent(q), oneLine(q.Detail, 70), quarantineState(q)})
	}
	if err := cli.Render(env.out, o.format, qs, []string{"ID", "RECEIVED (UTC)", "AGE", "ENDPOINT", "REASON", "EVENT", "DETAIL", "STATE"}, rows); err != nil {
		return err
	}
	if o.format == "table" && len(qs) == o.filter.Limit {
		fmt.Fprintf(env.out, "(first %d shown; raise --limit or narrow the filters for more)\n", o.filter.Limit)
	}
	return nil
}

type quarantineShowOptions struct {
	id      int64
	payload bool
	format  cli.OutputFormat
}

func newQuarantineShowCmd() *cobra.Command {
	o := quarantineShowOptions{format: "table"}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one quarantine entry: reason, detail, kept headers, resolution and audit trail",
		Long: `Show one quarantine entry: why it was kept out, the delivery headers kept for re-admission
(never signatures), its resolution and the operator actions on it. The body is access-restricted
and only printed with --payload.`,
		Example: `  hookinbox quarantine show 42
  hookinbox quarantine show 42 --payload`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseQuarantineID(args[0])
			if err != nil {
				return err
			}
			o.id = id
			return withReadOps(cmd, func(env opsEnv) error { return runQuarantineShow(cmd.Context(), env, o) })
		},
	}
	cmd.Flags().BoolVar(&o.payload, "payload", false, "also print the delivery's body (access-restricted)")
	cmd.Flags().Var(&o.format, "output", "table or json")
	return cmd
}

func parseQuarantineID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "quarantine:"), 10, 64)
	if err != nil || id < 1 {
		return 0, cli.Usagef("ID must be a quarantine entry id as listed by 'quarantine list' (got %q)", s)
	}
	return id, nil
}

func runQuarantineShow(ctx context.Context, env opsEnv, o quarantineShowOptions) error {
	q, err := env.svc.ShowQuarantine(ctx, o.id, o.payload)
	if err != nil {
		return err
	}
	out := env.out
	if o.payload {
		fmt.Fprintln(env.errOut, payloadNote)
	}
	if o.format == "json" {
		return cli.Render(out, o.format, q, nil, nil)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	field("id", strconv.FormatInt(q.ID, 10))
	field("reason", q.Reason)
	field("detail", orDash(q.Detail))
	field("endpoint", q.Endpoint)
	field("provider", q.Provider)
	field("account", orDash(q.Account))
	field("environment", orDash(q.Environment))
	field("event id", orDash(q.EventID))
	if q.EventKey != "" {
		field("event key", q.EventKey)
	}
	field("received", fmtTime(q.ReceivedAt)+" ("+fmtAge(time.Since(q.ReceivedAt))+" ago)")
	field("state", quarantineState(q.QuarantineView))
	if q.Resolution != "" {
		field("resolution", q.Resolution)
	}
	field("body sha256", q.BodySHA256)
	if o.payload {
		field("payload", fmt.Sprintf("%d bytes, below", q.PayloadBytes))
	} else {
		field("payload", fmt.Sprintf("%d bytes (access-restricted; --payload prints it)", q.PayloadBytes))
	}
	names := make([]string, 0, len(q.Headers))
	for n := range q.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		field("headers", "-")
	}
	for i, n := range names {
		label := ""
		if i == 0 {
			label = "headers"
		}
		field(label, n+": "+q.Headers[n])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if q.Hint != "" {
		fmt.Fprintln(out, "\nnext: "+q.Hint)
	}
	if err := printAudit(out, q.Actions); err != nil {
		return err
	}
	if o.payload && q.RawPayload != nil {
		fmt.Fprintln(out, "\npayload:")
		fmt.Fprintln(out, string(q.RawPayload))
	}
	return nil
}

type quarantineResolveOptions struct {
	ids    []int64
	action string
	reason string
	by     string
	format cli.OutputFormat
}

func newQuarantineResolveCmd() *cobra.Command {
	o := quarantineResolveOptions{format: "table"}
	cmd := &cobra.Command{
		Use:   "resolve ID... --action readmit|discard --reason TEXT [--by WHO]",
		Short: "Re-admit quarantined deliveries into the inbox, or discard them (audited)",
		Long: `Resolve open quarantine entries, each on its own; who (--by, default $USER), when and why
(--reason) are kept on each entry and in the operator audit. With several IDs an entry that
cannot be resolved stays open, the others are resolved, and the exit status is 1.

readmit re-derives the event through the intake's own path with the endpoint's CURRENT settings
and links (the delivery was authenticated when it arrived, so it is not verified again) and
inserts it into the inbox under its event key, then signals its resource workflow when it is
pending. It fails and leaves the entry open when the cause is still there: the account is still
not linked, the body is still malformed, or the event key is already in the inbox with another
body (a conflicting_duplicate can never be re-admitted as the same key: discard it, or replay
the original). If Temporal is unreachable the event is still committed and the sweeper
delivers it.

discard closes the entry without admitting anything.`,
		Example: `  hookinbox endpoints link --slug stripe-live --account acct_1Q… --workspace ws_42
  hookinbox quarantine resolve 17 --action readmit --reason "account linked (SUP-881)"
  hookinbox quarantine resolve 18 19 20 --action discard --reason "test events sent to live endpoint" --by alice`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ids = nil
			for _, a := range args {
				id, err := parseQuarantineID(a)
				if err != nil {
					return err
				}
				o.ids = append(o.ids, id)
			}
			if o.action != ops.ResolveReadmit && o.action != ops.ResolveDiscard {
				return cli.Usagef("--action must be readmit or discard (got %q)", o.action)
			}
			if strings.TrimSpace(o.reason) == "" {
				return cli.Usagef("--reason must say why (it is recorded in the audit)")
			}
			if strings.TrimSpace(o.by) == "" {
				return cli.Usagef("--by must not be empty")
			}
			return withOps(cmd, func(env opsEnv) error { return runQuarantineResolve(cmd.Context(), env, o) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.action, "action", "", "readmit or discard (required)")
	f.StringVar(&o.reason, "reason", "", "why (recorded in the audit; required)")
	f.StringVar(&o.by, "by", defaultActor(), "who (recorded in the audit)")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

func runQuarantineResolve(ctx context.Context, env opsEnv, o quarantineResolveOptions) error {
	res, err := env.svc.ResolveQuarantine(ctx, ops.Actor{Name: o.by}, o.ids, o.action, o.reason)
	if err != nil {
		return asUsage(err)
	}
	if o.format == "json" {
		var v any = res
		if len(res) == 1 {
			v = res[0]
		}
		if err := cli.Render(env.out, o.format, v, nil, nil); err != nil {
			return err
		}
	}
	failed := 0
	signalErr := ""
	for _, r := range res {
		if r.SignalErr != "" {
			signalErr = r.SignalErr
		}
		if r.Error != "" {
			failed++
			if o.format != "json" {
				fmt.Fprintf(env.errOut, "quarantine %d not resolved: %s\n", r.ID, r.Error)
			}
			continue
		}
		if o.format == "json" {
			continue
		}
		if r.Action == ops.ResolveDiscard {
			fmt.Fprintf(env.out, "quarantine %d discarded by %s (audit #%d)\n", r.ID, o.by, r.AuditID)
			continue
		}
		what := "inserted into the inbox"
		if r.Duplicate {
			what = "already in the inbox (the sender redelivered it after the cause was fixed)"
		}
		fmt.Fprintf(env.out, "quarantine %d readmitted by %s as %s (audit #%d): %s\n", r.ID, o.by, r.EventKey, r.AuditID, what)
		fmt.Fprintf(env.out, "  status %s, workspace %s, resource %s\n", r.Status, r.Workspace, resourceKindID(r.Resource))
		if r.Signaled {
			fmt.Fprintln(env.out, "  resource workflow signalled")
		}
	}
	if signalErr != "" {
		warnDoorbells(env.errOut, "Temporal unreachable ("+signalErr+"): the sweeper signals the re-admitted events once Temporal is reachable")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d quarantine entries not resolved (they stay open)", failed, len(res))
	}
	return nil
}

// resourceKindID is the kind/id part of a resource key.
func resourceKindID(resource string) string {
	r, err := keys.ParseResource(resource)
	if err != nil {
		return resource
	}
	return r.Kind + "/" + r.ID
}
