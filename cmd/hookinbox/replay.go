package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/app"
	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/starter"
)

// opsEnv is what the operator commands that change state need.
type opsEnv struct {
	st     *store.Store
	sig    keys.Doorbell
	out    io.Writer
	errOut io.Writer
	// signalTimeout bounds one SignalWithStart.
	signalTimeout time.Duration
}

// withOps opens the store and a lazy Temporal client (it connects on first
// signal, so a dry run or a refusal never waits on Temporal).
func withOps(cmd *cobra.Command, fn func(env opsEnv) error) error {
	return withConfigStore(cmd, func(cfg config.Config, st *store.Store) error {
		c, err := starter.DialLazy(cfg, quietLogger(cmd))
		if err != nil {
			return err
		}
		defer c.Close()
		return fn(opsEnv{st: st, sig: app.Resources(cfg, c), out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(),
			signalTimeout: 10 * time.Second})
	})
}

// doorbells rings each resource once after an operator act. The rows are
// already committed as pending, so a failure only costs latency: the first
// one stops further attempts (Temporal is likely down) and is reported as a
// warning, and the sweeper delivers the events when Temporal is back.
type doorbells struct {
	env  opsEnv
	rung map[keys.Resource]bool
	// failed is the first signalling error; later resources are not tried.
	failed error
	missed int
}

func newDoorbells(env opsEnv) *doorbells {
	return &doorbells{env: env, rung: map[keys.Resource]bool{}}
}

// ring signals r's workflow unless it was rung already; it reports whether r
// has been rung.
func (d *doorbells) ring(ctx context.Context, r keys.Resource, k keys.Event) bool {
	if d.rung[r] {
		return true
	}
	if d.failed != nil {
		d.missed++
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, d.env.signalTimeout)
	defer cancel()
	if err := d.env.sig.Ring(sctx, r, keys.SignalEvent, k.String()); err != nil {
		d.failed = err
		d.missed++
		return false
	}
	d.rung[r] = true
	return true
}

// warn reports a failed signal: the events are safe and will be delivered.
func (d *doorbells) warn() {
	if d.failed == nil {
		return
	}
	fmt.Fprintf(d.env.errOut, "warning: could not signal %d resource workflow(s): %v\n"+
		"  The events are committed as pending; the sweeper signals them once Temporal is reachable\n"+
		"  (pending rows due for longer than HOOKINBOX_SWEEP_AFTER, 1m by default).\n", d.missed, d.failed)
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

type replayOptions struct {
	key       *keys.Event
	statuses  []string
	since     time.Duration
	provider  string
	limit     int
	reason    string
	by        string
	force     bool
	dryRun    bool
	format    cli.OutputFormat
	selection string
}

var replayableStatuses = []string{keys.StatusExhausted, keys.StatusFailed}

func newReplayCmd() *cobra.Command {
	o := replayOptions{format: "table"}
	var since ageFlag
	cmd := &cobra.Command{
		Use:   "replay EVENT_KEY | --status exhausted|failed [--since D] [--provider P] [--limit N]  --reason TEXT [--by WHO]",
		Short: "Put events back through their resource workflow (audited; same idempotent path)",
		Long: `Replay events through the same idempotent path as a first delivery, never around it: each
row is put back to pending (attempts reset to 0, due now) and its resource workflow is signalled;
the business handlers' unique business keys then decide, so replaying an event whose effect
exists changes nothing. Every replay is audited: who (--by, default $USER), when, why (--reason,
required), and the row's previous status, attempts and last error ('inbox show' lists them).

Select one event by key, or many with --status exhausted|failed (plus --since, --provider,
--limit; --since counts from when the events were received). Failed and exhausted events are
replayed; pending ones are left alone (their workflow is signalled again). A done or ignored event
is only replayed with --force: a deliberate reprocessing, still guarded by the business keys.
--dry-run shows what would happen and changes nothing.

If Temporal is unreachable the rows stay pending and the sweeper delivers them later.`,
		Example: `  hookinbox replay stripe/acct_1/live/evt_1PxYz --reason "provider API fixed (INC-142)"
  hookinbox replay --status exhausted --since 6h --provider stripe --dry-run --reason "Stripe outage"
  hookinbox replay --status exhausted --since 6h --provider stripe --reason "Stripe outage" --by alice
  hookinbox replay stripe/acct_1/live/evt_1PxYz --force --reason "re-fetch after projection bug fix"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.since = time.Duration(since)
			if err := o.validate(cmd, args); err != nil {
				return err
			}
			return withOps(cmd, func(env opsEnv) error { return runReplay(cmd.Context(), env, o) })
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.statuses, "status", nil, "replay every event in this status: exhausted or failed (repeatable)")
	f.Var(&since, "since", "with --status: only events received within this long (e.g. 2h, 1d)")
	f.StringVar(&o.provider, "provider", "", "with --status: only this provider's events")
	f.IntVar(&o.limit, "limit", 100, "with --status: at most this many events per run")
	f.StringVar(&o.reason, "reason", "", "why (recorded in the audit; required)")
	f.StringVar(&o.by, "by", defaultActor(), "who (recorded in the audit)")
	f.BoolVar(&o.force, "force", false, "also replay a done or ignored event (deliberate reprocessing)")
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be replayed; change nothing")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

func (o *replayOptions) validate(cmd *cobra.Command, args []string) error {
	bulk := len(o.statuses) > 0
	switch {
	case len(args) == 1 && bulk:
		return cli.Usagef("give an EVENT_KEY or --status, not both")
	case len(args) == 0 && !bulk:
		return cli.Usagef("give an EVENT_KEY or --status exhausted|failed")
	}
	if len(args) == 1 {
		for _, n := range []string{"since", "provider", "limit"} {
			if cmd.Flags().Changed(n) {
				return cli.Usagef("--%s selects events with --status; it cannot be used with an EVENT_KEY", n)
			}
		}
		k, err := keys.ParseEvent(args[0])
		if err != nil {
			return cli.Usagef("EVENT_KEY must be provider/account/environment/event_id: %v", err)
		}
		o.key = &k
		o.selection = "key"
	} else {
		for _, s := range o.statuses {
			if !slices.Contains(replayableStatuses, s) {
				return cli.Usagef("--status must be exhausted or failed (got %q); replay a done or ignored event by its key with --force", s)
			}
		}
		if o.limit < 1 {
			return cli.Usagef("--limit must be at least 1")
		}
		sel := []string{"--status " + strings.Join(o.statuses, ",")}
		if o.since > 0 {
			sel = append(sel, "--since "+o.since.String())
		}
		if o.provider != "" {
			sel = append(sel, "--provider "+o.provider)
		}
		o.selection = strings.Join(sel, " ")
	}
	if strings.TrimSpace(o.reason) == "" {
		return cli.Usagef("--reason must say why (it is recorded in the audit)")
	}
	if strings.TrimSpace(o.by) == "" {
		return cli.Usagef("--by must not be empty")
	}
	return nil
}

// replayRowView is one event in the replay summary.
type replayRowView struct {
	Key               string `json:"key"`
	Resource          string `json:"resource"`
	PreviousStatus    string `json:"previous_status"`
	PreviousAttempts  int    `json:"previous_attempts"`
	PreviousLastError string `json:"previous_last_error,omitempty"`
	// Result: replayed, already_pending, refused, would_replay (dry run).
	Result   string `json:"result"`
	Detail   string `json:"detail,omitempty"`
	AuditID  int64  `json:"audit_id,omitempty"`
	Signaled bool   `json:"signaled"`
}

type replaySummary struct {
	DryRun    bool            `json:"dry_run"`
	Events    []replayRowView `json:"events"`
	Replayed  int             `json:"replayed"`
	Refused   int             `json:"refused"`
	More      bool            `json:"more"`
	Signaled  int             `json:"signaled_resources"`
	SignalErr string          `json:"signal_error,omitempty"`
}

const (
	resultWouldReplay = "would_replay"
	resultRefused     = "refused"
)

func runReplay(ctx context.Context, env opsEnv, o replayOptions) error {
	cands, more, err := replayCandidates(ctx, env.st, o)
	if err != nil {
		return err
	}
	sum := replaySummary{DryRun: o.dryRun, More: more, Events: []replayRowView{}}
	bells := newDoorbells(env)
	var refusal error
	for _, c := range cands {
		v := replayRowView{Key: c.Key.String(), Resource: c.Resource().String(), PreviousStatus: c.Status,
			PreviousAttempts: c.Attempts, PreviousLastError: c.LastError}
		if o.dryRun {
			v.Result, v.Detail = dryRunResult(c.Status, o.force)
			if v.Result == resultRefused {
				sum.Refused++
			}
			sum.Events = append(sum.Events, v)
			continue
		}
		res, err := env.st.ReplayInboxEvent(ctx, store.ReplayRequest{Key: c.Key, Actor: o.by, Reason: o.reason,
			Force: o.force, Selection: o.selection})
		var refused *store.ReplayRefusedError
		switch {
		case errors.As(err, &refused):
			v.Result, v.Detail = resultRefused, refused.Reason
			v.PreviousStatus = refused.Status
			sum.Refused++
			refusal = err
		case err != nil:
			// Print what was done so far, then fail.
			_ = printReplay(env.out, o.format, sum)
			return err
		default:
			v.Result, v.AuditID = res.Outcome, res.ActionID
			v.PreviousStatus, v.PreviousAttempts, v.PreviousLastError = res.PreviousStatus, res.PreviousAttempts, res.PreviousLastError
			if res.Outcome == store.Replayed {
				sum.Replayed++
			}
			if res.PayloadRedacted {
				v.Detail = "payload redacted by retention: handlers that read it will fail this event"
			}
			v.Signaled = bells.ring(ctx, res.Resource, res.Key)
		}
		sum.Events = append(sum.Events, v)
	}
	sum.Signaled = len(bells.rung)
	if bells.failed != nil {
		sum.SignalErr = bells.failed.Error()
	}
	if o.key != nil && refusal != nil {
		// One event asked for and refused: say why and fail.
		return refusal
	}
	if err := printReplay(env.out, o.format, sum); err != nil {
		return err
	}
	bells.warn()
	return nil
}

// replayCandidates selects the events to replay, and whether more match
// than the limit.
func replayCandidates(ctx context.Context, st *store.Store, o replayOptions) ([]store.InboxSummary, bool, error) {
	if o.key != nil {
		d, err := store.InspectInboxEvent(ctx, st.Pool, *o.key, false)
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, fmt.Errorf("event %s is not in the inbox (a quarantined delivery is re-admitted with 'quarantine resolve')", o.key)
		}
		if err != nil {
			return nil, false, err
		}
		return []store.InboxSummary{d.InboxSummary}, false, nil
	}
	evs, err := store.ListInboxEvents(ctx, st.Pool, store.InboxFilter{Statuses: o.statuses, Provider: o.provider,
		Since: o.since, Limit: o.limit + 1})
	if err != nil {
		return nil, false, err
	}
	if len(evs) > o.limit {
		return evs[:o.limit], true, nil
	}
	return evs, false, nil
}

func dryRunResult(status string, force bool) (string, string) {
	switch status {
	case keys.StatusPending:
		return store.AlreadyPending, "already pending: its workflow would only be signalled again"
	case keys.StatusDone, keys.StatusIgnored:
		if !force {
			return resultRefused, "the event is " + status + ": replaying it would be a no-op for its effects; --force reprocesses it"
		}
	}
	return resultWouldReplay, ""
}

func printReplay(out io.Writer, format cli.OutputFormat, sum replaySummary) error {
	rows := make([][]string, 0, len(sum.Events))
	for _, v := range sum.Events {
		result := v.Result
		if v.AuditID != 0 {
			result += " (audit #" + strconv.FormatInt(v.AuditID, 10) + ")"
		}
		rows = append(rows, []string{v.Key, v.Resource, v.PreviousStatus, strconv.Itoa(v.PreviousAttempts),
			orDash(oneLine(v.PreviousLastError, 60)), result, oneLine(v.Detail, 0)})
	}
	if err := cli.Render(out, format, sum, []string{"EVENT KEY", "RESOURCE", "WAS", "ATTEMPTS", "LAST ERROR", "RESULT", "NOTE"}, rows); err != nil {
		return err
	}
	if format == "json" {
		return nil
	}
	switch {
	case len(sum.Events) == 0:
		fmt.Fprintln(out, "nothing to replay")
	case sum.DryRun:
		fmt.Fprintf(out, "dry run: %d event(s) selected, %d would be refused; nothing changed\n", len(sum.Events), sum.Refused)
	default:
		fmt.Fprintf(out, "replayed %d event(s), %d refused; signalled %d resource workflow(s)\n", sum.Replayed, sum.Refused, sum.Signaled)
	}
	switch {
	case sum.More && sum.DryRun:
		fmt.Fprintln(out, "more events match than --limit: raise --limit to see them all")
	case sum.More:
		fmt.Fprintln(out, "more events match than --limit: run the command again for the next batch")
	}
	return nil
}
