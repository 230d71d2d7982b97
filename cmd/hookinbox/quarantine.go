package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/admission"
	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// The operator's quarantine commands: authenticated deliveries the intake
// kept out of the inbox (unknown account, malformed body, environment
// mismatch, same event key with another body), and their resolution.

var quarantineReasons = []string{store.ReasonUnknownAccount, store.ReasonMalformed, store.ReasonEnvironmentMismatch,
	store.ReasonConflictingDuplicate, store.ReasonAccountMismatch}

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
	filter store.QuarantineFilter
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
			if o.filter.Reason != "" && !slices.Contains(quarantineReasons, o.filter.Reason) {
				return cli.Usagef("--reason must be one of %s (got %q)", strings.Join(quarantineReasons, ", "), o.filter.Reason)
			}
			if o.filter.Limit < 1 {
				return cli.Usagef("--limit must be at least 1")
			}
			if all {
				o.filter.OpenOnly = false
			}
			return withStore(cmd, func(st *store.Store) error {
				return runQuarantineList(cmd.Context(), st, cmd.OutOrStdout(), o)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.filter.Reason, "reason", "", strings.Join(quarantineReasons, ", "))
	f.StringVar(&o.filter.Endpoint, "endpoint", "", "endpoint slug")
	f.BoolVar(&o.filter.OpenOnly, "open", true, "only entries not yet resolved")
	f.BoolVar(&all, "all", false, "resolved entries too (same as --open=false)")
	f.IntVar(&o.filter.Limit, "limit", 50, "at most this many entries")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

// quarantineView is a quarantine entry as printed.
type quarantineView struct {
	ID           int64             `json:"id"`
	Endpoint     string            `json:"endpoint"`
	Provider     string            `json:"provider"`
	Account      string            `json:"account,omitempty"`
	Environment  string            `json:"environment,omitempty"`
	EventID      string            `json:"event_id,omitempty"`
	EventKey     string            `json:"event_key,omitempty"`
	Reason       string            `json:"reason"`
	Detail       string            `json:"detail"`
	BodySHA256   string            `json:"body_sha256"`
	PayloadBytes int               `json:"payload_bytes"`
	Headers      map[string]string `json:"headers,omitempty"`
	ReceivedAt   time.Time         `json:"received_at"`
	ResolvedAt   *time.Time        `json:"resolved_at,omitempty"`
	ResolvedBy   string            `json:"resolved_by,omitempty"`
	Resolution   string            `json:"resolution,omitempty"`
}

func newQuarantineView(q *store.QuarantineItem, headers bool) quarantineView {
	v := quarantineView{ID: q.ID, Endpoint: q.EndpointSlug, Provider: q.Provider, Account: q.Account,
		Environment: q.Environment, EventID: q.EventID, Reason: q.Reason, Detail: q.Detail,
		BodySHA256: hex.EncodeToString(q.BodySHA256), PayloadBytes: q.PayloadBytes, ReceivedAt: q.ReceivedAt.UTC(),
		ResolvedAt: utcPtr(q.ResolvedAt), ResolvedBy: q.ResolvedBy, Resolution: q.Resolution}
	if k, ok := q.EventKey(); ok {
		v.EventKey = k.String()
	}
	if headers {
		v.Headers = q.Headers
	}
	return v
}

// quarantineEvent names what the entry is about: its event key, else its
// event id, else nothing known.
func quarantineEvent(q *store.QuarantineItem) string {
	if k, ok := q.EventKey(); ok {
		return k.String()
	}
	return orDash(q.EventID)
}

func quarantineState(q *store.QuarantineItem) string {
	if q.ResolvedAt == nil {
		return "open"
	}
	return "resolved by " + q.ResolvedBy + " at " + fmtTime(*q.ResolvedAt)
}

func runQuarantineList(ctx context.Context, st *store.Store, out io.Writer, o quarantineListOptions) error {
	qs, err := store.ListQuarantine(ctx, st.Pool, o.filter)
	if err != nil {
		return err
	}
	views := make([]quarantineView, 0, len(qs))
	rows := make([][]string, 0, len(qs))
	now := time.Now()
	for _, q := range qs {
		views = append(views, newQuarantineView(&q, false))
		rows = append(rows, []string{strconv.FormatInt(q.ID, 10), fmtTime(q.ReceivedAt), fmtAge(now.Sub(q.ReceivedAt)),
			q.EndpointSlug, q.Reason, quarantineEvent(&q), oneLine(q.Detail, 70), quarantineState(&q)})
	}
	if err := cli.Render(out, o.format, views, []string{"ID", "RECEIVED (UTC)", "AGE", "ENDPOINT", "REASON", "EVENT", "DETAIL", "STATE"}, rows); err != nil {
		return err
	}
	if o.format == "table" && len(qs) == o.filter.Limit {
		fmt.Fprintf(out, "(first %d shown; raise --limit or narrow the filters for more)\n", o.filter.Limit)
	}
	return nil
}

type quarantineShowOptions struct {
	id      int64
	payload bool
	format  cli.OutputFormat
}

type quarantineDetailView struct {
	quarantineView
	Payload any              `json:"payload,omitempty"`
	Actions []auditEntryView `json:"operator_actions"`
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
			return withStore(cmd, func(st *store.Store) error {
				return runQuarantineShow(cmd.Context(), st, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
			})
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

func runQuarantineShow(ctx context.Context, st *store.Store, out, errOut io.Writer, o quarantineShowOptions) error {
	q, err := store.GetQuarantineEntry(ctx, st.Pool, o.id, o.payload)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("quarantine entry %d does not exist", o.id)
	}
	if err != nil {
		return err
	}
	acts, err := store.ListOperatorActions(ctx, st.Pool, store.QuarantineTarget(o.id), 200)
	if err != nil {
		return err
	}
	if o.payload {
		fmt.Fprintln(errOut, payloadNote)
	}
	if o.format == "json" {
		v := quarantineDetailView{quarantineView: newQuarantineView(q, true), Actions: auditViews(acts)}
		if o.payload && q.Payload != nil {
			v.Payload = payloadValue(q.Payload)
		}
		return cli.Render(out, o.format, v, nil, nil)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	field("id", strconv.FormatInt(q.ID, 10))
	field("reason", q.Reason)
	field("detail", orDash(q.Detail))
	field("endpoint", q.EndpointSlug)
	field("provider", q.Provider)
	field("account", orDash(q.Account))
	field("environment", orDash(q.Environment))
	field("event id", orDash(q.EventID))
	if k, ok := q.EventKey(); ok {
		field("event key", k.String())
	}
	field("received", fmtTime(q.ReceivedAt)+" ("+fmtAge(time.Since(q.ReceivedAt))+" ago)")
	field("state", quarantineState(q))
	if q.Resolution != "" {
		field("resolution", q.Resolution)
	}
	field("body sha256", hex.EncodeToString(q.BodySHA256))
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
	if q.ResolvedAt == nil {
		fmt.Fprintln(out, "\nnext: "+quarantineHint(q))
	}
	if err := printAudit(out, acts); err != nil {
		return err
	}
	if o.payload && q.Payload != nil {
		fmt.Fprintln(out, "\npayload:")
		fmt.Fprintln(out, string(q.Payload))
	}
	return nil
}

// quarantineHint says how an open entry is usually resolved.
func quarantineHint(q *store.QuarantineItem) string {
	id := strconv.FormatInt(q.ID, 10)
	switch q.Reason {
	case store.ReasonUnknownAccount:
		return fmt.Sprintf("link the account ('hookinbox endpoints link --slug %s --account %s --workspace W'), then "+
			"'hookinbox quarantine resolve %s --action readmit --reason …'; or discard it", q.EndpointSlug, orDefault(q.Account, "ACCOUNT"), id)
	case store.ReasonConflictingDuplicate:
		k, _ := q.EventKey()
		return fmt.Sprintf("compare with the original ('hookinbox inbox show %s'); it cannot be re-admitted under the same key: "+
			"'hookinbox quarantine resolve %s --action discard --reason …' (replay the original if it needs another pass)", k, id)
	case store.ReasonAccountMismatch:
		return "a secret or an unsigned shop header claimed an account it is not bound to: possibly a forgery by another " +
			"tenant; if the account is rightly the secret's, bind it ('hookinbox endpoints secrets bind --slug " + q.EndpointSlug +
			" --id N --accounts …') and readmit, else 'hookinbox quarantine resolve " + id + " --action discard --reason …'"
	case store.ReasonEnvironmentMismatch:
		return "the sender delivered to the wrong environment's endpoint; fix its configuration, then " +
			"'hookinbox quarantine resolve " + id + " --action discard --reason …'"
	default:
		return "fix the cause (endpoint settings, or the sender), then 'hookinbox quarantine resolve " + id +
			" --action readmit --reason …'; or discard it"
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

type quarantineResolveOptions struct {
	id     int64
	action string
	reason string
	by     string
	format cli.OutputFormat
}

const (
	resolveReadmit = "readmit"
	resolveDiscard = "discard"
)

func newQuarantineResolveCmd() *cobra.Command {
	o := quarantineResolveOptions{format: "table"}
	cmd := &cobra.Command{
		Use:   "resolve ID --action readmit|discard --reason TEXT [--by WHO]",
		Short: "Re-admit a quarantined delivery into the inbox, or discard it (audited)",
		Long: `Resolve an open quarantine entry; who (--by, default $USER), when and why (--reason) are kept on
the entry and in the operator audit.

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
  hookinbox quarantine resolve 18 --action discard --reason "test event sent to live endpoint" --by alice`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseQuarantineID(args[0])
			if err != nil {
				return err
			}
			o.id = id
			if o.action != resolveReadmit && o.action != resolveDiscard {
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

// resolveView is the result of `quarantine resolve`.
type resolveView struct {
	ID        int64  `json:"id"`
	Action    string `json:"action"`
	AuditID   int64  `json:"audit_id"`
	EventKey  string `json:"event_key,omitempty"`
	Outcome   string `json:"outcome,omitempty"`
	Status    string `json:"status,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Signaled  bool   `json:"signaled"`
	SignalErr string `json:"signal_error,omitempty"`
}

func runQuarantineResolve(ctx context.Context, env opsEnv, o quarantineResolveOptions) error {
	v := resolveView{ID: o.id, Action: o.action}
	if o.action == resolveDiscard {
		act, err := env.st.DiscardQuarantine(ctx, o.id, o.by, o.reason)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("quarantine entry %d does not exist", o.id)
		}
		if err != nil {
			return err
		}
		v.AuditID, v.EventKey = act.ID, act.EventKey
		if o.format == "json" {
			return cli.Render(env.out, o.format, v, nil, nil)
		}
		fmt.Fprintf(env.out, "quarantine %d discarded by %s (audit #%d)\n", o.id, o.by, act.ID)
		return nil
	}

	res, err := admission.Readmit(ctx, env.st, o.id, o.by, o.reason)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("quarantine entry %d does not exist", o.id)
	}
	if err != nil {
		if errors.Is(err, admission.ErrCannotReadmit) {
			return fmt.Errorf("%w\nthe entry stays open", err)
		}
		return err
	}
	v.AuditID, v.EventKey, v.Outcome, v.Status = res.ActionID, res.Key.String(), res.Outcome.String(), res.Status
	v.Workspace, v.Resource = res.Workspace, res.Resource.String()
	bells := newDoorbells(env)
	if res.Status == keys.StatusPending {
		v.Signaled = bells.ring(ctx, res.Resource, res.Key)
		if bells.failed != nil {
			v.SignalErr = bells.failed.Error()
		}
	}
	if o.format == "json" {
		if err := cli.Render(env.out, o.format, v, nil, nil); err != nil {
			return err
		}
	} else {
		what := "inserted into the inbox"
		if res.Outcome == store.Duplicate {
			what = "already in the inbox (the sender redelivered it after the cause was fixed)"
		}
		fmt.Fprintf(env.out, "quarantine %d readmitted by %s as %s (audit #%d): %s\n", o.id, o.by, res.Key, res.ActionID, what)
		fmt.Fprintf(env.out, "  status %s, workspace %s, resource %s/%s\n", res.Status, res.Workspace, res.Resource.Kind, res.Resource.ID)
		if v.Signaled {
			fmt.Fprintln(env.out, "  resource workflow signalled")
		}
	}
	bells.warn()
	return nil
}
