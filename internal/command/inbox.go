package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// The operator's inbox commands (SPEC R23). Payloads are access-restricted:
// listings never read them and `show` prints one only when asked.

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
	filter ops.InboxFilter
	cursor string
	format cli.OutputFormat
}

func newInboxListCmd() *cobra.Command {
	o := inboxListOptions{format: "table"}
	var ff inboxFilterFlags
	cmd := &cobra.Command{
		Use:   "list [--status S] [--provider P] [--account A] [--workspace W] [--type T] [--resource KIND/ID|ID] [--endpoint SLUG] [--older-than D] [--since D] [--from T] [--to T]",
		Short: "List inbox events, newest first (never their payloads)",
		Long: `List inbox events, newest first. Filters combine (AND); --status may be repeated or
comma-separated. Ages accept Go durations and days: 90s, 15m, 2h, 7d. --since 2h lists events
received in the last two hours, --older-than 1h those received more than an hour ago; --from and
--to take times (RFC 3339 or a date). A full page ends with the --cursor of the next one.`,
		Example: `  hookinbox inbox list --status exhausted,failed
  hookinbox inbox list --resource invoice/in_1P… --output json
  hookinbox inbox list --status pending --older-than 10m
  hookinbox inbox list --workspace ws_42 --type invoice.paid --from 2026-05-01 --to 2026-05-02
  hookinbox inbox list --account acct_1 --since 1d --limit 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.filter = ff.filter()
			if err := ops.ValidateInboxFilter(o.filter); err != nil {
				return asUsage(err)
			}
			return withReadOps(cmd, func(env opsEnv) error { return runInboxList(cmd.Context(), env, o) })
		},
	}
	ff.register(cmd, 50, "at most this many events")
	cmd.Flags().StringVar(&o.cursor, "cursor", "", "continue a listing (printed at the end of a full page)")
	cmd.Flags().Var(&o.format, "output", "table or json")
	return cmd
}

func runInboxList(ctx context.Context, env opsEnv, o inboxListOptions) error {
	page, err := env.svc.ListInbox(ctx, o.filter, o.cursor)
	if err != nil {
		return asUsage(err)
	}
	rows := make([][]string, 0, len(page.Events))
	now := time.Now()
	for _, e := range page.Events {
		rows = append(rows, []string{fmtTime(e.ReceivedAt), fmtAge(now.Sub(e.ReceivedAt)), e.Key, e.EventType,
			e.ResourceKind + "/" + e.ResourceID, e.Workspace, e.Status, strconv.Itoa(e.Attempts), orDash(oneLine(outcomeOf(e.Status, e.Note, e.LastError), 80))})
	}
	if err := cli.Render(env.out, o.format, page.Events, []string{"RECEIVED (UTC)", "AGE", "EVENT KEY", "TYPE", "RESOURCE", "WORKSPACE",
		"STATUS", "ATTEMPTS", "OUTCOME / LAST ERROR"}, rows); err != nil {
		return err
	}
	if page.NextCursor != "" {
		if o.format == "table" {
			fmt.Fprintf(env.out, "(first %d shown; next page: --cursor %s)\n", o.filter.Limit, page.NextCursor)
		} else {
			fmt.Fprintf(env.errOut, "next page: --cursor %s\n", page.NextCursor)
		}
	}
	return nil
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
		Short: "Show one event: every column, its last error, its workflow's link and the operator actions on it",
		Long: `Show one inbox event by its key, provider/account/environment/event_id exactly as the intake
logs it (e.g. stripe/acct_1/live/evt_1P…): status, attempts, next attempt, last error, resource
and workspace, the resource workflow's page in the Temporal UI (HOOKINBOX_TEMPORAL_UI_URL), then
every operator action on it (replays, quarantine resolutions). An event retention deleted is
shown from its lineage record.

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
			return withReadOps(cmd, func(env opsEnv) error { return runInboxShow(cmd.Context(), env, o) })
		},
	}
	cmd.Flags().BoolVar(&o.payload, "payload", false, "also print the payload (access-restricted)")
	cmd.Flags().Var(&o.format, "output", "table or json")
	return cmd
}

func runInboxShow(ctx context.Context, env opsEnv, o inboxShowOptions) error {
	d, err := env.svc.ShowEvent(ctx, o.key, o.payload)
	if err != nil {
		return err
	}
	out := env.out
	if o.payload {
		fmt.Fprintln(env.errOut, payloadNote)
	}
	if o.format == "json" {
		return cli.Render(out, o.format, d, nil, nil)
	}

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, value) }
	now := time.Now()
	field("event key", d.Key)
	field("id", strconv.FormatInt(d.ID, 10))
	field("provider", d.Provider)
	field("account", d.Account)
	field("environment", d.Environment)
	field("event id", d.EventID)
	field("event type", d.EventType)
	field("endpoint", d.Endpoint)
	field("workspace", d.Workspace)
	field("resource", d.ResourceKind+"/"+d.ResourceID)
	field("workflow id", d.Workflow.ID)
	field("workflow", orDash(d.Workflow.URL))
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
	field("body sha256", d.BodySHA256)
	if d.SecretID != 0 {
		field("secret", "#"+strconv.FormatInt(d.SecretID, 10))
	} else {
		field("secret", "-")
	}
	switch {
	case d.Deleted:
		field("payload", "deleted by retention (this is the event's lineage record)")
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
	if err := printAudit(out, d.Actions); err != nil {
		return err
	}
	if o.payload && d.RawPayload != nil {
		fmt.Fprintln(out, "\npayload:")
		fmt.Fprintln(out, string(d.RawPayload))
	}
	return nil
}

// payloadNote is printed (to stderr) whenever a payload is shown.
const payloadNote = "note: printing a payload. Payloads are access-restricted (they may hold personal or payment " +
	"data): do not paste them into tickets, chat or logs."

// printAudit prints the operator actions section of a `show`.
func printAudit(out io.Writer, acts []ops.AuditEntry) error {
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
		"quarantine_reason", "outcome", "status", "workspace", "resource", "changed", "fingerprint"} {
		v, ok := d[k]
		if !ok || v == nil || v == "" || v == false {
			continue
		}
		parts = append(parts, k+"="+oneLine(fmt.Sprint(v), 60))
	}
	return orDash(strings.Join(parts, " "))
}

// outcomeOf is what a listing shows for a row: what handling did for a done
// row, else its last error (or why it was ignored).
func outcomeOf(status, note, lastErr string) string {
	if status == keys.StatusDone && note != "" {
		return note
	}
	return lastErr
}
