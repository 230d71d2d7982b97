package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
)

func newExplainCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "explain grant|subscription|alert|outbox|resource|event REF",
		Short: "Why an effect exists: its business key, every delivery behind it, its workflow, the operator acts",
		Long: `Explain an effect: its business key, every event and delivery of its resource (duplicates,
quarantined conflicts, and events retention deleted, from their kept lineage record), the other
effects on the resource, its outbox rows, its workflow (id and Temporal UI link) and every
operator act on any of them.

REF, by kind:
  grant         a grant id, its business key, provider/account/environment/invoice_id, or an invoice id
  subscription  a resource key, provider/account/environment/sub_id, or a subscription id
  alert         an alert id, its business key, provider/project/environment/feedback_id, or a feedback id
  outbox        an outbox id or operation key
  resource      a resource key (provider/account/environment/kind/id)
  event         an event key (provider/account/environment/event_id)`,
		Example: `  hookinbox explain grant in_1PxYz
  hookinbox explain subscription stripe/acct_1/live/sub_9 --output json
  hookinbox explain outbox 42`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ops.ParseLineageKind(args[0]); err != nil {
				return asUsage(err)
			}
			return withOps(cmd, func(env opsEnv) error {
				l, err := env.svc.Explain(cmd.Context(), args[0], args[1])
				if err != nil {
					return asUsage(err)
				}
				if format == "json" {
					return cli.Render(env.out, format, l, nil, nil)
				}
				return printLineage(cmd.Context(), env.out, l)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

// printTraces lists the traced deliveries' trace ids, each with its link
// where HOOKINBOX_TRACE_URL names a trace UI; the asked-for event first.
func printTraces(out io.Writer, l *ops.Lineage) {
	var lines []string
	for _, e := range l.Events {
		if e.Trace.ID == "" {
			continue
		}
		line := fmt.Sprintf("  %s  trace %s", e.KeyString, e.Trace.ID)
		if e.Trace.URL != "" {
			line += "  " + e.Trace.URL
		}
		if e.KeyString == l.Focus {
			lines = append([]string{line}, lines...)
		} else {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(out, "\ntraces:")
	for _, line := range lines {
		fmt.Fprintln(out, line)
	}
}

func printLineage(_ context.Context, out io.Writer, l *ops.Lineage) error {
	fmt.Fprintf(out, "%s\n", l.Summary)
	if l.BusinessKey != "" {
		fmt.Fprintf(out, "business key  %s\n", l.BusinessKey)
	}
	fmt.Fprintf(out, "resource      %s\n", l.ResourceKey)
	fmt.Fprintf(out, "workflow      %s\n", l.Workflow.ID)
	if l.Workflow.URL != "" {
		fmt.Fprintf(out, "              %s\n", l.Workflow.URL)
	}
	if len(l.Grants) > 0 {
		fmt.Fprintln(out, "\ncredit grants:")
		rows := [][]string{}
		for _, g := range l.Grants {
			rows = append(rows, []string{"#" + strconv.FormatInt(g.ID, 10), g.BusinessKey, g.Workspace, strconv.FormatInt(g.Credits, 10), g.EventKey, fmtTime(g.CreatedAt)})
		}
		if err := cli.Render(out, "table", nil, []string{"ID", "BUSINESS KEY", "WORKSPACE", "CREDITS", "BY EVENT", "AT (UTC)"}, rows); err != nil {
			return err
		}
	}
	if len(l.Alerts) > 0 {
		fmt.Fprintln(out, "\nfeedback alerts:")
		rows := [][]string{}
		for _, a := range l.Alerts {
			rows = append(rows, []string{"#" + strconv.FormatInt(a.ID, 10), a.BusinessKey, a.Workspace, a.EventKey, fmtTime(a.CreatedAt)})
		}
		if err := cli.Render(out, "table", nil, []string{"ID", "BUSINESS KEY", "WORKSPACE", "BY EVENT", "AT (UTC)"}, rows); err != nil {
			return err
		}
	}
	if len(l.Claims) > 0 {
		fmt.Fprintln(out, "\nclaimed business keys:")
		rows := [][]string{}
		for _, c := range l.Claims {
			rows = append(rows, []string{c.BusinessKey, c.Handler, c.EventKey, fmtTime(c.ClaimedAt)})
		}
		if err := cli.Render(out, "table", nil, []string{"BUSINESS KEY", "HANDLER", "BY EVENT", "AT (UTC)"}, rows); err != nil {
			return err
		}
	}
	if len(l.Forwards) > 0 {
		fmt.Fprintln(out, "\nforward attempts:")
		rows := [][]string{}
		for _, a := range l.Forwards {
			status := "-"
			if a.StatusCode != 0 {
				status = strconv.Itoa(a.StatusCode)
			}
			latency := "-" // a skipped attempt sent nothing
			if a.Outcome != ops.ForwardSkipped {
				latency = a.Latency.Round(time.Millisecond).String()
			}
			detail := orDash(a.Error)
			if a.CoveredBy != "" {
				detail = "covered by " + a.CoveredBy + "'s send, " + a.OperationKey
			}
			rows = append(rows, []string{a.Route, a.Event.EventID, strconv.Itoa(a.Attempt), a.Outcome, status,
				latency, detail, fmtTime(a.At)})
		}
		if err := cli.Render(out, "table", nil, []string{"ROUTE", "EVENT", "ATTEMPT", "OUTCOME", "STATUS", "LATENCY", "ERROR", "AT (UTC)"}, rows); err != nil {
			return err
		}
	}
	if p := l.Projection; p != nil {
		fmt.Fprintf(out, "\nsubscription state: %s (access %t, deleted %t, write #%d by %s, updated %s)\n", p.Status, p.Access,
			p.Deleted, p.WriteSeq, p.WrittenBy, fmtTime(p.UpdatedAt))
	}
	fmt.Fprintln(out, "\nevents and deliveries:")
	rows := [][]string{}
	for _, e := range l.Events {
		ref := orDash(e.KeyString)
		if e.Source == "quarantine" {
			ref = "quarantine:" + strconv.FormatInt(e.SourceID, 10) + " " + orDash(e.KeyString)
		}
		kept := ""
		if e.Deleted {
			kept = " (lineage record)"
		}
		rows = append(rows, []string{fmtTime(e.ReceivedAt), ref, orDash(e.EventType), e.Status + kept, e.BodySHA256[:min(12, len(e.BodySHA256))], oneLine(e.Role, 80)})
	}
	if err := cli.Render(out, "table", nil, []string{"RECEIVED (UTC)", "EVENT", "TYPE", "STATUS", "BODY SHA256", "ROLE"}, rows); err != nil {
		return err
	}
	printTraces(out, l)
	if len(l.Outbox) > 0 {
		fmt.Fprintln(out, "\noutbox:")
		rows := [][]string{}
		for _, o := range l.Outbox {
			rows = append(rows, []string{"#" + strconv.FormatInt(o.ID, 10), o.OperationKey, o.Kind, o.Destination, o.Status, strconv.Itoa(o.Attempts)})
		}
		if err := cli.Render(out, "table", nil, []string{"ID", "OPERATION KEY", "KIND", "DESTINATION", "STATUS", "ATTEMPTS"}, rows); err != nil {
			return err
		}
	}
	if len(l.Divergences) > 0 {
		fmt.Fprintln(out, "\nreconciliation divergences:")
		for _, d := range l.Divergences {
			fmt.Fprintf(out, "  %s %s: local %q, provider %q (corrected %t, by %s)\n", fmtTime(d.DetectedAt), d.Field, d.LocalValue, d.ProviderValue, d.Corrected, d.DetectedBy)
		}
	}
	if err := printAudit(out, l.Actions); err != nil {
		return err
	}
	return nil
}
