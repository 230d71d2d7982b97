package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// Defaults of the facts backfill.
const (
	DefaultBackfillOverlap  = time.Hour
	DefaultBackfillLookback = 72 * time.Hour
)

// BackfillFactsInput starts or continues a facts backfill run.
type BackfillFactsInput struct {
	PassSettings
	// Overlap: a pass lists events created since the last complete pass's
	// start minus Overlap (late-listed events, clock skew).
	Overlap time.Duration `json:"overlap,omitempty"`
	// Lookback: how far back the first pass of a scope looks.
	Lookback time.Duration `json:"lookback,omitempty"`
	// Types to list (default activities.BackfillTypes()).
	Types []string  `json:"types,omitempty"`
	Carry PassCarry `json:"carry"`
}

// BackfillFactsWorkflow recovers facts whose webhook never came (SPEC R19),
// run by the backfill schedule. For every account linked to a Stripe
// endpoint with an API key it pages through the provider's events of the
// handled types created since the scope's watermark (the start of its last
// complete pass) minus the overlap, or since the lookback on a first pass,
// and feeds each missing one through the intake's own derivation and insert,
// marked as backfilled; the inserted events are handled by their resource
// workflows like any webhook, and the business keys make each effect happen
// once. The cursor is checkpointed after every page and carried across
// continue-as-new; the watermark advances only after a full pass.
func BackfillFactsWorkflow(ctx workflow.Context, in BackfillFactsInput) (PassTotals, error) {
	s := in.withDefaults(ctx)
	overlap, lookback, types := in.Overlap, in.Lookback, in.Types
	if overlap <= 0 {
		overlap = DefaultBackfillOverlap
	}
	if lookback <= 0 {
		lookback = DefaultBackfillLookback
	}
	if len(types) == 0 {
		types = activities.BackfillTypes()
	}
	p := &pager{kind: activities.PassFacts, title: "Facts backfill", s: s, carry: in.Carry}
	p.begin = func(cp keys.Checkpoint) {
		p.carry.Since = backfillSince(cp, overlap, lookback)
	}
	p.page = func(ctx workflow.Context, pi activities.PageInput) (activities.PageResult, error) {
		var res activities.PageResult
		actx := p.pageActivity(ctx, fmt.Sprintf("events of %s page %d", pi.Scope.Account, pi.Pages+1))
		err := workflow.ExecuteActivity(actx, onProvider.BackfillPage,
			activities.BackfillPageInput{PageInput: pi, Since: p.carry.Since, Types: types}).Get(ctx, &res)
		return res, err
	}
	p.next = func(ctx workflow.Context, c PassCarry) error {
		next := in
		next.Carry = c
		return workflow.NewContinueAsNewError(ctx, BackfillFactsWorkflow, next)
	}
	return p.run(ctx)
}

// backfillSince is where a pass starts listing: the last complete pass's
// start minus the overlap, or the lookback before this pass's start on a
// first pass. A resumed pass keeps its start, so it lists the same window.
func backfillSince(cp keys.Checkpoint, overlap, lookback time.Duration) time.Time {
	if cp.Watermark != nil {
		return cp.Watermark.Add(-overlap)
	}
	if cp.StartedAt != nil {
		return cp.StartedAt.Add(-lookback)
	}
	return time.Time{} // not reached: a begun pass has a start
}
