package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// Defaults of the paged passes (reconciliation and facts backfill).
const (
	DefaultPageSize     = 100
	DefaultPagesPerRun  = 50
	DefaultPageAttempts = 12
	// PassOperator names the passes an operator starts (hookinbox reconcile
	// --endpoint): they keep checkpoints of their own, apart from the
	// scheduled passes'.
	PassOperator = "operator"
)

// ProviderTaskQueue is the task queue of the activities that call a
// provider's list APIs: its own queue, so Temporal can rate-limit them
// (HOOKINBOX_PROVIDER_RPS) apart from everything else.
func ProviderTaskQueue(taskQueue string) string { return taskQueue + "-provider" }

// ControlTaskQueue is the task queue of the scheduled workflows (sweeper,
// reconciliation, backfill, retention) and their own activities: apart from
// the resource workflows, so a large backlog of resource work cannot delay
// the sweeper that is there to recover it.
func ControlTaskQueue(taskQueue string) string { return taskQueue + "-control" }

// PassSettings shape a paged pass over the scopes (accounts) of Stripe
// endpoints with an API key.
type PassSettings struct {
	// Endpoint limits the pass to one endpoint's accounts ("" for all).
	Endpoint string `json:"endpoint,omitempty"`
	// Pass is "" for the scheduled passes, PassOperator for an operator's.
	Pass string `json:"pass,omitempty"`
	// Restart starts every scope's pass over instead of resuming one an
	// earlier run left unfinished.
	Restart bool `json:"restart,omitempty"`
	// PageSize items per list call (1..100).
	PageSize int `json:"page_size,omitempty"`
	// PagesPerRun: continue-as-new after this many pages (or when Temporal
	// suggests it).
	PagesPerRun int `json:"pages_per_run,omitempty"`
	// PageAttempts bounds the attempts of one page; a scope whose page
	// fails for good is skipped until the next run, which resumes it.
	PageAttempts int `json:"page_attempts,omitempty"`
	// ProviderTaskQueue runs the page activities (default: the workflow's
	// task queue + "-provider").
	ProviderTaskQueue string `json:"provider_task_queue,omitempty"`
	// SignalRate paces the doorbells of a page (per second; 0: unpaced):
	// each costs its resource workflow one provider fetch.
	SignalRate float64 `json:"signal_rate,omitempty"`
}

func (s PassSettings) withDefaults(ctx workflow.Context) PassSettings {
	if s.PageSize <= 0 || s.PageSize > 100 {
		s.PageSize = DefaultPageSize
	}
	if s.PagesPerRun <= 0 {
		s.PagesPerRun = DefaultPagesPerRun
	}
	if s.PageAttempts <= 0 {
		s.PageAttempts = DefaultPageAttempts
	}
	if s.ProviderTaskQueue == "" {
		s.ProviderTaskQueue = ProviderTaskQueue(strings.TrimSuffix(workflow.GetInfo(ctx).TaskQueueName, "-control"))
	}
	return s
}

// PassTotals count what a run (over all its continue-as-new generations) did.
type PassTotals struct {
	// Scopes whose pass completed; Resumed of them were taken over from an
	// earlier run's checkpoint; Failed lists scopes skipped after a page
	// failed for good (their checkpoint stays for the next run).
	Scopes  int      `json:"scopes"`
	Resumed int      `json:"resumed,omitempty"`
	Failed  []string `json:"failed,omitempty"`
	Pages   int      `json:"pages"`
	Seen    int      `json:"seen"`
	// Differing (subscriptions): listed state differed from the projection.
	Differing int `json:"differing,omitempty"`
	// Inserted (facts): events the inbox did not have; Duplicates it had.
	Inserted   int `json:"inserted,omitempty"`
	Duplicates int `json:"duplicates,omitempty"`
	Rejected   int `json:"rejected,omitempty"`
	// Redelivered (deliveries): missing deliveries the sender was asked to
	// send again; Abandoned: given up on.
	Redelivered  int `json:"redelivered,omitempty"`
	Abandoned    int `json:"abandoned,omitempty"`
	Signalled    int `json:"signalled"`
	SignalFailed int `json:"signal_failed,omitempty"`
}

func (t *PassTotals) add(r activities.PageResult) {
	t.Pages++
	t.Seen += r.Listed
	t.Differing += r.Differing
	t.Inserted += r.Inserted
	t.Duplicates += r.Duplicates
	t.Rejected += r.Rejected
	t.Redelivered += r.Redelivered
	t.Abandoned += r.Abandoned
	t.Signalled += r.Signalled
	t.SignalFailed += r.SignalFailed
}

// PassCarry is what a paged pass hands to its continuation: the scopes, the
// one in progress and its cursor. The cursor is also checkpointed in the
// database after every page, for a run that is killed rather than continued.
type PassCarry struct {
	Scopes []keys.Scope `json:"scopes,omitempty"`
	Listed bool         `json:"listed"`
	// Index of the scope in progress.
	Index int `json:"index"`
	// InPass: that scope's pass was begun; Cursor and Pages are where it is.
	InPass bool   `json:"in_pass"`
	Cursor string `json:"cursor,omitempty"`
	Pages  int64  `json:"pages"`
	// Since (facts): the pass lists events created at or after it.
	Since  time.Time  `json:"since,omitzero"`
	Totals PassTotals `json:"totals"`
	Runs   int        `json:"runs"`
}

// pager runs a paged pass over every scope, one page activity at a time,
// continuing-as-new with its carry.
type pager struct {
	kind string
	// scopes is the ListScopes kind ("" for the Stripe accounts).
	scopes string
	title  string
	s      PassSettings
	carry  PassCarry
	owner  string
	// begin is called when a scope's pass is taken (facts: compute Since).
	begin func(cp keys.Checkpoint)
	// page runs one page activity.
	page func(ctx workflow.Context, in activities.PageInput) (activities.PageResult, error)
	// next builds the continue-as-new error carrying c.
	next func(ctx workflow.Context, c PassCarry) error

	thisRun int
	last    string
	current *keys.Checkpoint
}

func (p *pager) run(ctx workflow.Context) (PassTotals, error) {
	info := workflow.GetInfo(ctx)
	p.owner = info.WorkflowExecution.ID + "/" + info.FirstRunID
	dbCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	if !p.carry.Listed {
		var scopes []keys.Scope
		if err := workflow.ExecuteActivity(dbCtx, onControl.ListScopes, activities.ListScopesInput{Endpoint: p.s.Endpoint, Kind: p.scopes}).Get(ctx, &scopes); err != nil {
			return p.carry.Totals, fmt.Errorf("list scopes: %w", err)
		}
		p.carry.Scopes, p.carry.Listed = scopes, true
	}
	p.details(ctx)
	for p.carry.Index < len(p.carry.Scopes) {
		sc := p.carry.Scopes[p.carry.Index]
		name := activities.CheckpointName(p.kind, sc, p.s.Pass)
		if !p.carry.InPass {
			var begun activities.BeginPassResult
			err := workflow.ExecuteActivity(dbCtx, onControl.BeginPass,
				activities.BeginPassInput{Checkpoint: name, Owner: p.owner, Restart: p.s.Restart}).Get(ctx, &begun)
			if err != nil {
				return p.carry.Totals, fmt.Errorf("begin pass %s: %w", name, err)
			}
			cp := begun.Checkpoint
			p.carry.InPass, p.carry.Cursor, p.carry.Pages = true, cp.Cursor, cp.Pages
			p.current = &cp
			if begun.Resumed {
				p.carry.Totals.Resumed++
				p.last = fmt.Sprintf("resumed %s at page %d from its checkpoint", name, cp.Pages+1)
			}
			if p.begin != nil {
				p.begin(cp)
			}
			p.details(ctx)
		}
		for {
			if p.thisRun >= p.s.PagesPerRun || (p.thisRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
				p.carry.Runs++
				return p.carry.Totals, p.next(ctx, p.carry)
			}
			res, err := p.page(ctx, activities.PageInput{
				Scope: sc, Checkpoint: name, Owner: p.owner, Pages: p.carry.Pages, Cursor: p.carry.Cursor, Limit: p.s.PageSize,
				SignalRate: p.s.SignalRate,
			})
			if err != nil {
				// Skipped until the next run, which resumes at the checkpoint.
				p.carry.Totals.Failed = append(p.carry.Totals.Failed, name+": "+lastError(err))
				p.last = "skipped " + name + ": " + lastError(err)
				workflow.GetLogger(ctx).Warn("pass skipped a scope", "checkpoint", name, "error", lastError(err))
				break
			}
			p.thisRun++
			p.carry.Totals.add(res)
			p.carry.Cursor, p.carry.Pages = res.Next, res.Checkpoint.Pages
			cp := res.Checkpoint
			p.current = &cp
			p.last = pageNote(res)
			if res.Done {
				p.carry.Totals.Scopes++
				p.details(ctx)
				break
			}
			p.details(ctx)
		}
		p.carry.Index++
		p.carry.InPass, p.carry.Cursor, p.carry.Pages, p.carry.Since = false, "", 0, time.Time{}
		p.current = nil
	}
	p.last = "finished"
	p.details(ctx)
	return p.carry.Totals, nil
}

// pageActivity returns the options of a page activity: on the provider
// task queue (rate-limited), heartbeating, retried with the activity's own
// delays (Retry-After honoured) up to PageAttempts.
func (p *pager) pageActivity(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           p.s.ProviderTaskQueue,
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		Summary:             keys.MarkdownText(summary), // it names accounts and endpoints: text
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute,
			MaximumAttempts: int32(p.s.PageAttempts),
		},
	})
}

func pageNote(r activities.PageResult) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("page %d: %d listed", r.Checkpoint.Pages, r.Listed))
	if r.Differing > 0 {
		b.WriteString(fmt.Sprintf(", %d differing", r.Differing))
	}
	if r.Inserted > 0 || r.Duplicates > 0 {
		b.WriteString(fmt.Sprintf(", %d missing (inserted), %d already in the inbox", r.Inserted, r.Duplicates))
	}
	if r.Rejected > 0 {
		b.WriteString(fmt.Sprintf(", %d not admissible", r.Rejected))
	}
	if r.Redelivered > 0 {
		b.WriteString(fmt.Sprintf(", %d redelivery requested", r.Redelivered))
	}
	if r.Abandoned > 0 {
		b.WriteString(fmt.Sprintf(", %d abandoned", r.Abandoned))
	}
	b.WriteString(fmt.Sprintf(", %d signalled", r.Signalled))
	if r.Repeated {
		b.WriteString(" (recorded by an earlier attempt)")
	}
	if r.Done {
		b.WriteString("; pass complete")
	}
	return b.String()
}

// details sets the Temporal UI's current details: the scope in progress,
// its page and counters, and the run's totals.
func (p *pager) details(ctx workflow.Context) {
	var b strings.Builder
	pass := "scheduled pass"
	if p.s.Pass != "" {
		pass = p.s.Pass + " pass"
	}
	b.WriteString(fmt.Sprintf("**%s** (%s, run #%d)\n\n", p.title, pass, p.carry.Runs+1))
	if p.carry.Index < len(p.carry.Scopes) {
		sc := p.carry.Scopes[p.carry.Index]
		b.WriteString(fmt.Sprintf("scope %d/%d: endpoint %s, account %s (%s)", p.carry.Index+1, len(p.carry.Scopes),
			keys.MarkdownText(sc.Endpoint), keys.MarkdownText(sc.Account), keys.MarkdownText(sc.Environment)))
		if c := p.current; c != nil {
			b.WriteString(fmt.Sprintf("\n\npage %d done, %d seen, %d divergences this pass", c.Pages, c.Seen, c.Divergences))
			if c.Cursor != "" {
				b.WriteString(fmt.Sprintf("; cursor %s", keys.MarkdownText(c.Cursor)))
			}
		}
		if !p.carry.Since.IsZero() {
			b.WriteString(fmt.Sprintf("\n\nevents since %s", p.carry.Since.UTC().Format(time.RFC3339)))
		}
		b.WriteString("\n\n")
	} else if p.carry.Listed {
		b.WriteString(fmt.Sprintf("%d scope(s) done\n\n", len(p.carry.Scopes)))
	}
	t := p.carry.Totals
	b.WriteString(fmt.Sprintf("totals: %d scope(s) complete, %d page(s), %d seen, %d signalled", t.Scopes, t.Pages, t.Seen, t.Signalled))
	if t.Differing > 0 {
		b.WriteString(fmt.Sprintf(", %d differing", t.Differing))
	}
	if t.Inserted > 0 || t.Duplicates > 0 {
		b.WriteString(fmt.Sprintf(", %d missing events inserted, %d already in the inbox", t.Inserted, t.Duplicates))
	}
	if t.Redelivered > 0 || t.Abandoned > 0 {
		b.WriteString(fmt.Sprintf(", %d redeliveries requested, %d abandoned", t.Redelivered, t.Abandoned))
	}
	if t.Resumed > 0 {
		b.WriteString(fmt.Sprintf(", %d resumed from a checkpoint", t.Resumed))
	}
	if len(t.Failed) > 0 {
		b.WriteString(fmt.Sprintf(", %d scope(s) skipped", len(t.Failed)))
	}
	if p.last != "" {
		b.WriteString("\n\nlast: " + keys.MarkdownText(p.last)) // errors quote providers' answers
	}
	workflow.SetCurrentDetails(ctx, b.String())
}

// ReconcileSubscriptionsInput starts or continues a subscriptions
// reconciliation run.
type ReconcileSubscriptionsInput struct {
	PassSettings
	// SignalAll signals every listed subscription, not only those whose
	// listed state differs from the projection.
	SignalAll bool      `json:"signal_all,omitempty"`
	Carry     PassCarry `json:"carry"`
}

// ReconcileSubscriptionsWorkflow reconciles the subscription projection
// with the provider (SPEC R19), run by the reconcile schedule (or by an
// operator for one endpoint). For every account linked to a Stripe endpoint
// with an API key it pages through the provider's subscription list with a
// cursor, checkpointed after every page and carried across continue-as-new.
// Each page compares the listed subscriptions with their projections and
// rings the reconcile doorbell of every one that differs or is missing: its
// own ResourceWorkflow then fetches, corrects and records the divergences,
// so reconciliation and webhooks never race. Progress is in the current
// details and the checkpoint rows.
func ReconcileSubscriptionsWorkflow(ctx workflow.Context, in ReconcileSubscriptionsInput) (PassTotals, error) {
	s := in.withDefaults(ctx)
	reason := fmt.Sprintf("%s pass %s", orScheduled(s.Pass), workflow.GetInfo(ctx).WorkflowExecution.ID)
	p := &pager{kind: activities.PassSubscriptions, title: "Subscriptions reconciliation", s: s, carry: in.Carry}
	p.page = func(ctx workflow.Context, pi activities.PageInput) (activities.PageResult, error) {
		var res activities.PageResult
		actx := p.pageActivity(ctx, fmt.Sprintf("subscriptions of %s page %d", pi.Scope.Account, pi.Pages+1))
		err := workflow.ExecuteActivity(actx, onProvider.ReconcilePage,
			activities.ReconcilePageInput{PageInput: pi, SignalAll: in.SignalAll, Reason: reason}).Get(ctx, &res)
		return res, err
	}
	p.next = func(ctx workflow.Context, c PassCarry) error {
		next := in
		next.Carry = c
		return workflow.NewContinueAsNewError(ctx, ReconcileSubscriptionsWorkflow, next)
	}
	return p.run(ctx)
}

func orScheduled(pass string) string {
	if pass == "" {
		return "scheduled"
	}
	return pass
}
