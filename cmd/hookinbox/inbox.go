package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// The operator's inbox commands (SPEC R23). Payloads are access-restricted:
// listings never read them and `show` prints one only when asked.

var inboxStatuses = []string{keys.StatusPending, keys.StatusDone, keys.StatusIgnored, keys.StatusFailed, keys.StatusExhausted}

func newInboxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "Inspect accepted events: list with filters, show one with its last error and audit trail",
		Long: `Inspect the inbox: every accepted event with its status (pending, done, ignored, failed,
exhausted), attempts, next attempt and last error. Event keys are printed as
provider/account/environment/event_id, as in the intake's logs. Payloads are access-restricted:
listings never print them, 'show' only with --payload. See docs/operations.md.`,
	}
	cmd.AddCommand(newInboxListCmd(), newInboxShowCmd())
	return cmd
}

type inboxListOptions struct {
	filter store.InboxFilter
	format cli.OutputFormat
}

func newInboxListCmd() *cobra.Command {
	o := inboxListOptions{format: "table"}
	var olderThan, since ageFlag
	cmd := &cobra.Command{
		Use:   "list [--status S] [--provider P] [--account A] [--resource KIND/ID|ID] [--endpoint SLUG] [--older-than D] [--since D]",
		Short: "List inbox events, newest first (never their payloads)",
		Long: `List inbox events, newest first. Filters combine (AND); --status may be repeated or
comma-separated. Ages accept Go durations and days: 90s, 15m, 2h, 7d. --since 2h lists events
received in the last two hours, --older-than 1h those received more than an hour ago.`,
		Example: `  hookinbox inbox list --status exhausted,failed
  hookinbox inbox list --resource invoice/in_1P… --output json
  hookinbox inbox list --status pending --older-than 10m
  hookinbox inbox list --account acct_1 --since 1d --limit 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range o.filter.Statuses {
				if !slices.Contains(inboxStatuses, s) {
					return cli.Usagef("--status must be one of %s (got %q)", strings.Join(inboxStatuses, ", "), s)
				}
			}
			if o.filter.Limit < 1 {
				return cli.Usagef("--limit must be at least 1")
			}
			o.filter.OlderThan, o.filter.Since = time.Duration(olderThan), time.Duration(since)
			return withOperatorStore(cmd, func(st *store.Store) error {
				return runInboxList(cmd.Context(), st, cmd.OutOrStdout(), o)
			})
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.filter.Statuses, "status", nil, "pending, done, ignored, failed or exhausted (repeatable)")
	f.StringVar(&o.filter.Provider, "provider", "", "stripe, github, standard or shopify")
	f.StringVar(&o.filter.Account, "account", "", "source account")
	f.StringVar(&o.filter.Resource, "resource", "", "resource as KIND/ID (invoice/in_1) or just its ID")
	f.StringVar(&o.filter.Endpoint, "endpoint", "", "endpoint slug")
	f.Var(&olderThan, "older-than", "received more than this long ago (e.g. 30m, 2h, 7d)")
	f.Var(&since, "since", "received within this long (e.g. 30m, 2h, 7d)")
	f.IntVar(&o.filter.Limit, "limit", 50, "at most this many events")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

func runInboxList(ctx context.Context, st *store.Store, out io.Writer, o inboxListOptions) error {
	evs, err := store.ListInboxEvents(ctx, st.Pool, o.filter)
	if err != nil {
		return err
	}
	views := make([]inboxRowView, 0, len(evs))
	rows := make([][]string, 0, len(evs))
	now := time.Now()
	for _, e := range evs {
		views = append(views, newInboxRowView(&e))
		rows = append(rows, []string{fmtTime(e.ReceivedAt), fmtAge(now.Sub(e.ReceivedAt)), e.Key.String(), e.EventType,
			e.ResourceKind + "/" + e.ResourceID, e.WorkspaceID, e.Status, strconv.Itoa(e.Attempts), orDash(oneLine(outcomeOf(e.Status, e.Note, e.LastError), 80))})
	}
	if err := cli.Render(out, o.format, views, []string{"RECEIVED (UTC)", "AGE", "EVENT KEY", "TYPE", "RESOURCE", "WORKSPACE",
		"STATUS", "ATTEMPTS", "OUTCOME / LAST ERROR"}, rows); err != nil {
		return err
	}
	if o.format == "table" && len(evs) == o.filter.Limit {
		fmt.Fprintf(out, "(first %d shown; raise --limit or narrow the filters for more)\n", o.filter.Limit)
	}
	return nil
}

// inboxRowView is an inbox row as printed (never the payload).
type inboxRowView struct {
	ID            int64      `json:"id"`
	Key           string     `json:"key"`
	Provider      string     `json:"provider"`
	Account       string     `json:"account"`
	Environment   string     `json:"environment"`
	EventID       string     `json:"event_id"`
	Endpoint      string     `json:"endpoint"`
	Workspace     string     `json:"workspace"`
	EventType     string     `json:"event_type"`
	ResourceKind  string     `json:"resource_kind"`
	ResourceID    string     `json:"resource_id"`
	Resource      string     `json:"resource"`
	Origin        string     `json:"origin"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastError     string     `json:"last_error,omitempty"`
	Note          string     `json:"note,omitempty"`
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	ReceivedAt    time.Time  `json:"received_at"`
	ProcessedAt   *time.Time `json:"processed_at,omitempty"`
}

func newInboxRowView(e *store.InboxSummary) inboxRowView {
	return inboxRowView{ID: e.ID, Key: e.Key.String(), Provider: e.Key.Provider, Account: e.Key.Account,
		Environment: e.Key.Environment, EventID: e.Key.EventID, Endpoint: e.EndpointSlug, Workspace: e.WorkspaceID,
		EventType: e.EventType, ResourceKind: e.ResourceKind, ResourceID: e.ResourceID, Resource: e.Resource().String(),
		Origin: e.Origin, Status: e.Status, Attempts: e.Attempts, LastError: e.LastError, Note: e.Note,
		NextAttemptAt: e.NextAttemptAt.UTC(), ReceivedAt: e.ReceivedAt.UTC(), ProcessedAt: utcPtr(e.ProcessedAt)}
}

// inboxDetailView is `inbox show` in JSON.
type inboxDetailView struct {
	inboxRowView
	ProviderVersion *int64           `json:"provider_version,omitempty"`
	OccurredAt      *time.Time       `json:"occurred_at,omitempty"`
	BodySHA256      string           `json:"body_sha256"`
	SecretID        int64            `json:"secret_id,omitempty"`
	PayloadBytes    int              `json:"payload_bytes"`
	PayloadRedacted bool             `json:"payload_redacted"`
	Payload         any              `json:"payload,omitempty"`
	Actions         []auditEntryView `json:"operator_actions"`
}

type inboxShowOptions struct {
	key     keys.Event
	payload bool
	format  cli.OutputFormat
}

func newInboxShowCmd() *cobra.Command {
	o := inboxShowOptions{format: "table"}
	cmd := &cobra.Command{
		Use:   "show EVENT_KEY",
		Short: "Show one event: every column, its last error and the operator actions on it",
		Long: `Show one inbox event by its key, provider/account/environment/event_id exactly as the intake
logs it (e.g. stripe/acct_1/live/evt_1P…): status, attempts, next attempt, last error, resource
and workspace, then every operator action on it (replays, quarantine resolutions).

The payload is access-restricted and only printed with --payload.`,
		Example: `  hookinbox inbox show stripe/acct_1/live/evt_1PxYz
  hookinbox inbox show github/4242/live/6f2c… --output json
  hookinbox inbox show stripe/acct_1/live/evt_1PxYz --payload`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := keys.ParseEvent(args[0])
			if err != nil {
				return cli.Usagef("EVENT_KEY must be provider/account/environment/event_id: %v", err)
			}
			o.key = k
			return withOperatorStore(cmd, func(st *store.Store) error {
				return runInboxShow(cmd.Context(), st, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
			})
		},
	}
	cmd.Flags().BoolVar(&o.payload, "payload", false, "also print the payload (access-restricted)")
	cmd.Flags().Var(&o.format, "output", "table or json")
	return cmd
}

func runInboxShow(ctx context.Context, st *store.Store, out, errOut io.Writer, o inboxShowOptions) error {
	d, err := store.InspectInboxEvent(ctx, st.Pool, o.key, o.payload)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("event %s is not in the inbox (check 'hookinbox quarantine list' and the key's escaping)", o.key)
	}
	if err != nil {
		return err
	}
	acts, err := store.ListOperatorActions(ctx, st.Pool, o.key.String(), 200)
	if err != nil {
		return err
	}
	if o.payload {
		fmt.Fprintln(errOut, payloadNote)
	}
	if o.format == "json" {
		v := inboxDetailView{inboxRowView: newInboxRowView(&d.InboxSummary), ProviderVersion: d.ProviderVersion,
			OccurredAt: utcPtr(d.OccurredAt), BodySHA256: hex.EncodeToString(d.BodySHA256), SecretID: d.SecretID,
			PayloadBytes: d.PayloadBytes, PayloadRedacted: d.PayloadRedacted, Actions: auditViews(acts)}
		if o.payload && d.Payload != nil {
			v.Payload = payloadValue(d.Payload)
		}
		return cli.Render(out, o.format, v, nil, nil)
	}

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	now := time.Now()
	field("event key", d.Key.String())
	field("id", strconv.FormatInt(d.ID, 10))
	field("provider", d.Key.Provider)
	field("account", d.Key.Account)
	field("environment", d.Key.Environment)
	field("event id", d.Key.EventID)
	field("event type", d.EventType)
	field("endpoint", d.EndpointSlug)
	field("workspace", d.WorkspaceID)
	field("resource", d.ResourceKind+"/"+d.ResourceID)
	field("workflow id", "resource/"+d.Resource().String())
	field("origin", d.Origin)
	field("status", d.Status)
	field("attempts", strconv.Itoa(d.Attempts))
	field("outcome", orDash(oneLine(d.Note, 0)))
	field("last error", orDash(oneLine(d.LastError, 0)))
	if d.Status == keys.StatusPending {
		field("next attempt", fmtTime(d.NextAttemptAt)+" ("+fmtRelative(now, d.NextAttemptAt)+")")
	} else {
		field("next attempt", "- (not pending)")
	}
	field("received", fmtTime(d.ReceivedAt)+" ("+fmtAge(now.Sub(d.ReceivedAt))+" ago)")
	field("processed", fmtTimePtr(d.ProcessedAt))
	field("occurred", fmtTimePtr(d.OccurredAt))
	if d.ProviderVersion != nil {
		field("provider version", strconv.FormatInt(*d.ProviderVersion, 10))
	} else {
		field("provider version", "-")
	}
	field("body sha256", hex.EncodeToString(d.BodySHA256))
	if d.SecretID != 0 {
		field("secret", "#"+strconv.FormatInt(d.SecretID, 10))
	} else {
		field("secret", "-")
	}
	switch {
	case d.PayloadRedacted:
		field("payload", "redacted by retention")
	case o.payload:
		field("payload", fmt.Sprintf("%d bytes, below", d.PayloadBytes))
	default:
		field("payload", fmt.Sprintf("%d bytes (access-restricted; --payload prints it)", d.PayloadBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printAudit(out, acts); err != nil {
		return err
	}
	if o.payload && d.Payload != nil {
		fmt.Fprintln(out, "\npayload:")
		fmt.Fprintln(out, string(d.Payload))
	}
	return nil
}

// payloadNote is printed (to stderr) whenever a payload is shown.
const payloadNote = "note: printing a payload. Payloads are access-restricted (they may hold personal or payment " +
	"data): do not paste them into tickets, chat or logs."

// payloadValue is a payload for JSON output: itself when it is JSON, else a string.
func payloadValue(p []byte) any {
	if json.Valid(p) {
		return json.RawMessage(p)
	}
	return string(p)
}

// auditEntryView is an operator action as printed.
type auditEntryView struct {
	ID       int64          `json:"id"`
	At       time.Time      `json:"at"`
	Actor    string         `json:"actor"`
	Action   string         `json:"action"`
	Target   string         `json:"target"`
	EventKey string         `json:"event_key,omitempty"`
	Reason   string         `json:"reason"`
	Details  map[string]any `json:"details,omitempty"`
}

func auditViews(acts []store.OperatorAction) []auditEntryView {
	out := make([]auditEntryView, 0, len(acts))
	for _, a := range acts {
		out = append(out, auditEntryView{ID: a.ID, At: a.At.UTC(), Actor: a.Actor, Action: a.Action, Target: a.Target,
			EventKey: a.EventKey, Reason: a.Reason, Details: a.Details})
	}
	return out
}

// printAudit prints the operator actions section of a `show`.
func printAudit(out io.Writer, acts []store.OperatorAction) error {
	fmt.Fprintln(out)
	if len(acts) == 0 {
		fmt.Fprintln(out, "operator actions: none")
		return nil
	}
	fmt.Fprintln(out, "operator actions:")
	rows := make([][]string, 0, len(acts))
	for _, a := range acts {
		rows = append(rows, []string{"#" + strconv.FormatInt(a.ID, 10), fmtTime(a.At), a.Actor, a.Action, a.Target,
			oneLine(a.Reason, 60), auditDetails(a.Details)})
	}
	return cli.Render(out, "table", nil, []string{"ID", "AT (UTC)", "BY", "ACTION", "TARGET", "REASON", "DETAILS"}, rows)
}

// auditDetails renders the interesting details of an action on one line.
func auditDetails(d map[string]any) string {
	var parts []string
	for _, k := range []string{"previous_status", "previous_attempts", "previous_last_error", "force", "selection",
		"quarantine_reason", "outcome", "status", "workspace", "resource"} {
		v, ok := d[k]
		if !ok || v == nil || v == "" || v == false {
			continue
		}
		parts = append(parts, k+"="+oneLine(fmt.Sprint(v), 60))
	}
	return orDash(strings.Join(parts, " "))
}

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
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 30m, 2h, 7d)", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 30m, 2h, 7d)", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

// fmtAge renders a duration compactly: 45s, 12m, 3h12m, 2d4h.
func fmtAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

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

// outcomeOf is what a listing shows for a row: what handling did for a done
// row, else its last error (or why it was ignored).
func outcomeOf(status, note, lastErr string) string {
	if status == keys.StatusDone && note != "" {
		return note
	}
	return lastErr
}
