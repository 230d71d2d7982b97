package command

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
)

type replayOptions struct {
	req    ops.ReplayRequest
	by     string
	format cli.OutputFormat
	// stdin: the keys come from standard input (EVENT_KEY "-").
	stdin bool
}

func newReplayCmd() *cobra.Command {
	o := replayOptions{format: "table"}
	var ff inboxFilterFlags
	cmd := &cobra.Command{
		Use:   "replay EVENT_KEY | - | [filters of 'inbox list'] --reason TEXT [--by WHO] [--force] [--dry-run]",
		Short: "Put events back through their resource workflow (audited; same idempotent path)",
		Long: `Replay events through the same idempotent path as a first delivery, never around it: each
row is put back to pending (attempts reset to 0, due now) and its resource workflow is signalled;
the business handlers' unique business keys then decide, so replaying an event whose effect
exists changes nothing. Every replay is audited: who (--by, default $USER), when, why (--reason,
required), and the row's previous status, attempts and last error ('inbox show' lists them).

Select one event by key; many with "-" (event keys from standard input, one per line; blank
lines and lines starting with # are skipped); or many with the filters of 'inbox list'
(--status, --provider, --account, --workspace, --type, --resource, --endpoint, --since,
--older-than, --from, --to; at most --limit per run). A filter without --status replays
exhausted and failed events. Pending events are left alone (their workflow is signalled again).
A done or ignored event is only replayed with --force: a deliberate reprocessing, still guarded
by the business keys. --dry-run shows what would happen and changes nothing.

A replay of many events is a replay job, recorded with its progress (the console and
GET /api/replays show it); a progress bar runs on standard error. If Temporal is unreachable
the rows stay pending and the sweeper delivers them later.`,
		Example: `  hookinbox replay stripe/acct_1/live/evt_1PxYz --reason "provider API fixed (INC-142)"
  hookinbox replay --status exhausted --since 6h --provider stripe --dry-run --reason "Stripe outage"
  hookinbox replay --status exhausted --since 6h --provider stripe --reason "Stripe outage" --by alice
  hookinbox inbox list --status failed --output json | jq -r '.[].key' | hookinbox replay - --reason "INC-150"
  hookinbox replay stripe/acct_1/live/evt_1PxYz --force --reason "re-fetch after projection bug fix"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(cmd, args, &ff); err != nil {
				return err
			}
			return withOps(cmd, func(env opsEnv) error { return runReplay(cmd.Context(), env, o) })
		},
	}
	ff.register(cmd, 100, "with filters: at most this many events per run")
	f := cmd.Flags()
	f.StringVar(&o.req.Reason, "reason", "", "why (recorded in the audit; required)")
	f.StringVar(&o.by, "by", defaultActor(), "who (recorded in the audit)")
	f.BoolVar(&o.req.Force, "force", false, "also replay done or ignored events (deliberate reprocessing)")
	f.BoolVar(&o.req.DryRun, "dry-run", false, "list what would be replayed; change nothing")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

func (o *replayOptions) validate(cmd *cobra.Command, args []string, ff *inboxFilterFlags) error {
	flag, filtered := ff.changed(cmd)
	switch {
	case len(args) == 1 && filtered:
		return cli.Usagef("give an EVENT_KEY (or -) or filters, not both (--%s selects events)", flag)
	case len(args) == 0 && !filtered:
		return cli.Usagef("give an EVENT_KEY, - (keys on standard input) or filters such as --status exhausted")
	case len(args) == 1 && cmd.Flags().Changed("limit"):
		return cli.Usagef("--limit applies to filters; it cannot be used with an EVENT_KEY")
	}
	switch {
	case len(args) == 1 && args[0] == "-":
		o.stdin = true
	case len(args) == 1:
		k, err := keys.ParseEvent(args[0])
		if err != nil {
			return cli.Usagef("EVENT_KEY must be provider/account/environment/event_id: %v", err)
		}
		o.req.Keys, o.req.Selection = []keys.Event{k}, "key"
	default:
		f := ff.filter()
		if f.Limit < 1 {
			return cli.Usagef("--limit must be at least 1")
		}
		o.req.Filter = &f
		var sel []string
		for _, n := range filterFlagNames {
			if cmd.Flags().Changed(n) {
				sel = append(sel, "--"+n+" "+cmd.Flags().Lookup(n).Value.String())
			}
		}
		o.req.Selection = strings.Join(sel, " ")
		o.req.Selection = strings.NewReplacer("[", "", "]", "").Replace(o.req.Selection)
	}
	if strings.TrimSpace(o.req.Reason) == "" {
		return cli.Usagef("--reason must say why (it is recorded in the audit)")
	}
	if strings.TrimSpace(o.by) == "" {
		return cli.Usagef("--by must not be empty")
	}
	if !o.stdin {
		return asUsage(o.req.Validate())
	}
	return nil
}

// readKeys reads event keys, one per line; a bad line is a usage error and
// nothing is replayed.
func readKeys(r io.Reader) ([]keys.Event, error) {
	var out []keys.Event
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := keys.ParseEvent(line)
		if err != nil {
			return nil, cli.Usagef("standard input, line %d: not an event key (provider/account/environment/event_id): %v", n, err)
		}
		out = append(out, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, cli.Usagef("no event keys on standard input")
	}
	return out, nil
}

func runReplay(ctx context.Context, env opsEnv, o replayOptions) error {
	who := ops.Actor{Name: o.by}
	if o.stdin {
		ks, err := readKeys(env.in)
		if err != nil {
			return err
		}
		o.req.Keys = ks
	}
	single := len(o.req.Keys) == 1 && !o.stdin
	if single || o.req.DryRun {
		sum, err := env.svc.Replay(ctx, who, o.req)
		if err != nil {
			return asUsage(err)
		}
		if err := printReplay(env.out, o.format, sum); err != nil {
			return err
		}
		if sum.SignalErr != "" {
			warnDoorbells(env.errOut, fmt.Sprintf("Temporal unreachable (%s): %d resource workflow(s) not signalled; "+
				"the sweeper signals them once Temporal is reachable", sum.SignalErr, sum.Replayed))
		}
		return nil
	}

	// Many events: a replay job, run here, with a progress bar.
	more := false
	if f := o.req.Filter; f != nil {
		n, err := env.svc.CountInbox(ctx, withDefaultStatuses(*f), f.Limit+1)
		if err != nil {
			return asUsage(err)
		}
		more = n > f.Limit
	}
	job, err := env.svc.StartReplayJob(ctx, who, o.req)
	if err != nil {
		return asUsage(err)
	}
	sum := ops.ReplaySummary{JobID: job.ID, More: more, Events: []ops.ReplayRow{}}
	bar := newProgress(env.errOut, job.Total)
	final, err := env.svc.RunReplayJob(ctx, job.ID, func(j *ops.ReplayJob, row ops.ReplayRow) {
		sum.Events = append(sum.Events, row)
		bar.set(j.Processed)
	})
	bar.done()
	if final != nil {
		sum.Replayed, sum.Refused, sum.Errors, sum.Signaled, sum.SignalErr = final.Replayed, final.Refused, final.Errors,
			final.Signaled, final.SignalError
	}
	if perr := printReplay(env.out, o.format, sum); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if sum.SignalErr != "" {
		warnDoorbells(env.errOut, "Temporal unreachable ("+sum.SignalErr+"): the sweeper signals the replayed events once Temporal is reachable "+
			"(pending rows due for longer than HOOKINBOX_SWEEP_AFTER, 1m by default)")
	}
	if final != nil && final.Status != ops.JobDone {
		return fmt.Errorf("replay job %d %s after %d of %d event(s): %s", final.ID, final.Status, final.Processed, final.Total, final.LastError)
	}
	return nil
}

func withDefaultStatuses(f ops.InboxFilter) ops.InboxFilter {
	if len(f.Statuses) == 0 {
		f.Statuses = ops.ReplayableByDefault
	}
	return f
}

func printReplay(out io.Writer, format cli.OutputFormat, sum ops.ReplaySummary) error {
	rows := make([][]string, 0, len(sum.Events))
	for _, v := range sum.Events {
		result := v.Result
		if v.AuditID != 0 {
			result += " (audit #" + strconv.FormatInt(v.AuditID, 10) + ")"
		}
		rows = append(rows, []string{v.Key, orDash(v.Resource), orDash(v.PreviousStatus), strconv.Itoa(v.PreviousAttempts),
			orDash(oneLine(v.PreviousLastError, 60)), result, oneLine(v.Detail, 0)})
	}
	if err := cli.Render(out, format, sum, []string{"EVENT KEY", "RESOURCE", "WAS", "ATTEMPTS", "LAST ERROR", "RESULT", "NOTE"}, rows); err != nil {
		return err
	}
	if format == "json" {
		return nil
	}
	job := ""
	if sum.JobID != 0 {
		job = fmt.Sprintf(" (replay job %d)", sum.JobID)
	}
	switch {
	case len(sum.Events) == 0:
		fmt.Fprintln(out, "nothing to replay")
	case sum.DryRun:
		fmt.Fprintf(out, "dry run: %d event(s) selected, %d would be refused; nothing changed\n", len(sum.Events), sum.Refused)
	default:
		fmt.Fprintf(out, "replayed %d event(s), %d refused; signalled %d resource workflow(s)%s\n", sum.Replayed, sum.Refused, sum.Signaled, job)
	}
	if sum.Errors > 0 {
		fmt.Fprintf(out, "%d event(s) could not be replayed (see NOTE)\n", sum.Errors)
	}
	switch {
	case sum.More && sum.DryRun:
		fmt.Fprintln(out, "more events match than --limit: raise --limit to see them all")
	case sum.More:
		fmt.Fprintln(out, "more events match than --limit: run the command again for the next batch")
	}
	return nil
}

// progress draws a progress bar on a terminal, and nothing elsewhere.
type progress struct {
	w     io.Writer
	total int
	tty   bool
	last  int
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, last: -1}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	p.set(0)
	return p
}

func (p *progress) set(n int) {
	if !p.tty || n == p.last {
		return
	}
	p.last = n
	const width = 30
	filled := width
	if p.total > 0 {
		filled = min(width, n*width/p.total)
	}
	fmt.Fprintf(p.w, "\rreplaying [%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), n, p.total)
}

func (p *progress) done() {
	if p.tty && p.last >= 0 {
		fmt.Fprintln(p.w)
	}
}
