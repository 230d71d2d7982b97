package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/workflows"
)

// Scope is what a run's events touch: the accounts whose inbox rows it
// watches and the workspaces whose outbox rows it waits for.
type Scope struct {
	// Accounts are the source accounts (Stripe accounts and feedback projects).
	Accounts   []string
	Workspaces []string
}

// Backlog is where a scope's work stands.
type Backlog struct {
	Rows, Pending, Done, Ignored, Failed, Exhausted int64
	// Waiting are pending rows that wait for another fact to arrive (a
	// credit note for its invoice's grant: the invoice's event may have
	// been dropped, so only the backfill brings it), due again or not.
	Waiting int64
	// OldestPending is the age of the oldest pending row.
	OldestPending time.Duration
	// Outbox rows: Unsent (pending or uncertain), sent, held for review, failed.
	OutboxUnsent, OutboxSent, OutboxHeld, OutboxFailed int64
	// At is when it was read.
	At time.Time `json:"-"`
}

// Settled reports whether nothing is left to do: no pending inbox row, no
// unsent outbox row.
func (b Backlog) Settled() bool { return b.Pending == 0 && b.OutboxUnsent == 0 }

// OnlyWaiting reports whether all that is left waits for another fact: the
// pending rows all wait (credit notes for their invoice's grant) and no
// outbox row is unsent. Their facts may be among the dropped events, so
// this is settled for the purpose of running the backfill that brings
// them; rows still waiting at the end are violations of inbox-settled.
func (b Backlog) OnlyWaiting() bool { return b.Pending == b.Waiting && b.OutboxUnsent == 0 }

// String is the backlog in one progress line.
func (b Backlog) String() string {
	s := fmt.Sprintf("inbox %d rows: %d pending", b.Rows, b.Pending)
	if b.Pending > 0 {
		s += fmt.Sprintf(" (oldest %s)", b.OldestPending.Round(time.Second))
	}
	if b.Waiting > 0 {
		s += fmt.Sprintf(", %d waiting for a grant", b.Waiting)
	}
	s += fmt.Sprintf(", %d done, %d ignored", b.Done, b.Ignored)
	if b.Failed+b.Exhausted > 0 {
		s += fmt.Sprintf(", %d failed, %d exhausted", b.Failed, b.Exhausted)
	}
	s += fmt.Sprintf(" · outbox %d unsent, %d sent", b.OutboxUnsent, b.OutboxSent)
	if b.OutboxHeld+b.OutboxFailed > 0 {
		s += fmt.Sprintf(", %d held, %d failed", b.OutboxHeld, b.OutboxFailed)
	}
	return s
}

// ReadBacklog counts the scope's inbox rows by status and its outbox rows.
func ReadBacklog(ctx context.Context, db store.DB, sc Scope) (Backlog, error) {
	b := Backlog{At: time.Now()}
	var oldest *float64
	err := db.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'done'),
		       count(*) FILTER (WHERE status = 'ignored'), count(*) FILTER (WHERE status = 'failed'),
		       count(*) FILTER (WHERE status = 'exhausted'),
		       extract(epoch FROM now() - min(coalesce(pending_since, received_at)) FILTER (WHERE status = 'pending'))::float8,
		       count(*) FILTER (WHERE status = 'pending' AND starts_with(coalesce(last_error, ''), $2))
		  FROM webhook_inbox WHERE source_account = ANY($1)`, sc.Accounts, credits.WaitingForGrant).
		Scan(&b.Rows, &b.Pending, &b.Done, &b.Ignored, &b.Failed, &b.Exhausted, &oldest, &b.Waiting)
	if err != nil {
		return b, fmt.Errorf("read inbox backlog: %w", err)
	}
	if oldest != nil {
		b.OldestPending = time.Duration(*oldest * float64(time.Second))
	}
	err = db.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE status IN ('pending', 'uncertain')), count(*) FILTER (WHERE status = 'sent'),
		       count(*) FILTER (WHERE status = 'held_for_review'), count(*) FILTER (WHERE status = 'failed')
		  FROM outbox WHERE workspace_id = ANY($1)`, sc.Workspaces).
		Scan(&b.OutboxUnsent, &b.OutboxSent, &b.OutboxHeld, &b.OutboxFailed)
	if err != nil {
		return b, fmt.Errorf("read outbox backlog: %w", err)
	}
	return b, nil
}

// ConvergeOptions shape Converge.
type ConvergeOptions struct {
	// Timeout gives up waiting (the caller then checks the invariants
	// anyway: what is stuck shows there). Default 30 minutes.
	Timeout time.Duration
	// Every is the polling and progress interval. Default 2 s.
	Every time.Duration
	// Progress receives one line per poll (nil: none).
	Progress io.Writer
	// Label starts each progress line.
	Label string
	// UntilWaiting: a backlog whose rows all wait for another fact counts
	// as settled (Backlog.OnlyWaiting), for a caller that runs the backfill
	// next. Otherwise nothing may be left (Backlog.Settled).
	UntilWaiting bool
}

// ErrNotConverged is returned by Converge when the timeout passed first.
var ErrNotConverged = errors.New("not converged")

// Converge waits until the scope's backlog is settled (or, UntilWaiting,
// only waits for other facts), seen twice in a row (so a row between its
// completion and its outbox send is not missed), printing progress, and returns the first settled backlog of that streak
// (its At is when the work was seen drained), or the last one read.
func Converge(ctx context.Context, db store.DB, sc Scope, o ConvergeOptions) (Backlog, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Minute
	}
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	start := time.Now()
	deadline := start.Add(o.Timeout)
	settled := 0
	var last, first Backlog
	for {
		b, err := ReadBacklog(ctx, db, sc)
		if err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%s[%4ds] could not read the backlog (retrying): %v\n", o.Label, int(time.Since(start).Seconds()), err)
			}
		} else {
			last = b
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%s[%4ds] %s\n", o.Label, int(time.Since(start).Seconds()), b)
			}
			if b.Settled() || (o.UntilWaiting && b.OnlyWaiting()) {
				if settled == 0 {
					first = b
				}
				settled++
			} else {
				settled = 0
			}
			if settled >= 2 {
				return first, nil
			}
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("%w after %s: %s", ErrNotConverged, o.Timeout, last)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(o.Every):
		}
	}
}

// PassRun is one run of a scheduled pass (the facts backfill, the GitHub
// delivery recovery) started by TriggerSchedule, or an operator's pass over
// one endpoint (BackfillEndpoint, RecoverGitHubEndpoint).
type PassRun struct {
	ScheduleID string
	WorkflowID string
	Totals     workflows.PassTotals
}

// BackfillRun is a facts backfill run (TriggerBackfill, BackfillEndpoint).
type BackfillRun = PassRun

// TriggerBackfill runs the facts backfill schedule of taskQueue now and
// waits for that run to finish (TriggerSchedule).
func TriggerBackfill(ctx context.Context, c client.Client, taskQueue string, progress io.Writer, timeout time.Duration) (BackfillRun, error) {
	return TriggerSchedule(ctx, c, starter.ScheduleBackfill, taskQueue, progress, timeout)
}

// TriggerSchedule runs schedule name (starter.ScheduleBackfill,
// starter.ScheduleGitHubRecovery) of taskQueue now, as `hookinbox
// schedules trigger NAME` does, and waits for that run to finish: a run
// already in progress (which may have listed the provider before the items
// of interest existed) is waited for first, and a trigger the schedule
// skipped is repeated.
func TriggerSchedule(ctx context.Context, c client.Client, name, taskQueue string, progress io.Writer, timeout time.Duration) (PassRun, error) {
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run := PassRun{ScheduleID: starter.ScheduleID(name, taskQueue)}
	h := c.ScheduleClient().GetHandle(ctx, run.ScheduleID)
	logf := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, name+": "+format+"\n", args...)
		}
	}
	for {
		d, err := h.Describe(ctx)
		if err != nil {
			return run, fmt.Errorf("schedule %s (is it disabled by an interval of 0?): %w", run.ScheduleID, err)
		}
		if n := len(d.Info.RunningWorkflows); n > 0 {
			id := d.Info.RunningWorkflows[n-1].WorkflowID
			logf("a run is already in progress (%s); waiting for it before triggering ours", id)
			if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil && ctx.Err() != nil {
				return run, fmt.Errorf("wait for %s: %w", id, ctx.Err())
			}
			continue
		}
		before, skipped := d.Info.NumActions, d.Info.NumActionsSkippedOverlap
		if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
			return run, fmt.Errorf("trigger %s: %w", run.ScheduleID, err)
		}
		for run.WorkflowID == "" {
			select {
			case <-ctx.Done():
				return run, fmt.Errorf("the triggered run of %s never showed: %w", run.ScheduleID, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
			d, err := h.Describe(ctx)
			if err != nil {
				continue
			}
			if d.Info.NumActionsSkippedOverlap > skipped {
				break // another run started first: wait for it, then trigger again
			}
			if d.Info.NumActions > before && len(d.Info.RecentActions) > 0 {
				if r := d.Info.RecentActions[len(d.Info.RecentActions)-1].StartWorkflowResult; r != nil {
					run.WorkflowID = r.WorkflowID
				}
			}
		}
		if run.WorkflowID == "" {
			continue
		}
		logf("triggered %s, workflow %s; waiting for it to finish", run.ScheduleID, run.WorkflowID)
		if err := c.GetWorkflow(ctx, run.WorkflowID, "").Get(ctx, &run.Totals); err != nil {
			return run, fmt.Errorf("%s run %s: %w", name, run.WorkflowID, err)
		}
		logf("%s", describeTotals(name, run.Totals))
		return run, nil
	}
}

// describeTotals is the one line a pass's progress ends with.
func describeTotals(name string, t workflows.PassTotals) string {
	if name == starter.ScheduleGitHubRecovery {
		return fmt.Sprintf("%d hook(s), %d page(s), %d attempt(s) listed; redeliveries asked %d, fetched %d, abandoned %d; %d skipped hook(s)",
			t.Scopes, t.Pages, t.Seen, t.Redelivered, t.Inserted, t.Abandoned, len(t.Failed))
	}
	return fmt.Sprintf("%d scope(s), %d page(s), %d event(s) listed, %d missing and inserted, %d already in the inbox, %d rejected, %d skipped scope(s)",
		t.Scopes, t.Pages, t.Seen, t.Inserted, t.Duplicates, t.Rejected, len(t.Failed))
}

// BackfillEndpoint runs an operator facts backfill pass limited to one
// endpoint's accounts (workflow ID hookinbox-backfill-facts-endpoint-SLUG,
// checkpoints apart from the scheduled passes) and waits for it: what to do
// when the schedule's run is held up by other scopes.
func BackfillEndpoint(ctx context.Context, c client.Client, taskQueue, endpoint string, progress io.Writer, timeout time.Duration) (BackfillRun, error) {
	in := workflows.BackfillFactsInput{PassSettings: workflows.PassSettings{Endpoint: endpoint, Pass: workflows.PassOperator, Restart: true}}
	return endpointPass(ctx, c, starter.ScheduleBackfill, taskQueue, endpoint, workflows.BackfillFactsWorkflow, in, progress, timeout)
}

// RecoverGitHubEndpoint runs an operator GitHub delivery recovery pass
// limited to one endpoint's hook (workflow ID
// hookinbox-recover-github-endpoint-SLUG, checkpoints apart from the
// scheduled passes) and waits for it: what to do when the schedule is
// turned off or its run is held up by other hooks.
func RecoverGitHubEndpoint(ctx context.Context, c client.Client, taskQueue, endpoint string, progress io.Writer, timeout time.Duration) (PassRun, error) {
	in := workflows.RecoverDeliveriesInput{PassSettings: workflows.PassSettings{Endpoint: endpoint, Pass: workflows.PassOperator, Restart: true}}
	return endpointPass(ctx, c, starter.ScheduleGitHubRecovery, taskQueue, endpoint, workflows.RecoverDeliveriesWorkflow, in, progress, timeout)
}

func endpointPass(ctx context.Context, c client.Client, name, taskQueue, endpoint string, wf, in any, progress io.Writer, timeout time.Duration) (PassRun, error) {
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run := PassRun{WorkflowID: starter.ScheduleID(name, taskQueue) + "-endpoint-" + endpoint}
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: run.WorkflowID, TaskQueue: workflows.ControlTaskQueue(taskQueue)}, wf, in)
	if err != nil {
		return run, fmt.Errorf("start %s: %w", run.WorkflowID, err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "%s: started %s over endpoint %s; waiting for it to finish\n", name, run.WorkflowID, endpoint)
	}
	if err := wr.Get(ctx, &run.Totals); err != nil {
		return run, fmt.Errorf("%s run %s: %w", name, run.WorkflowID, err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "%s: %s\n", name, describeTotals(name, run.Totals))
	}
	return run, nil
}
