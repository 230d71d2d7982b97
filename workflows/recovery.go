package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// Defaults of the delivery recovery.
const (
	DefaultRecoveryOverlap = time.Hour
	// DefaultRecoveryLookback: GitHub keeps (and redelivers) the deliveries
	// of the last three days.
	DefaultRecoveryLookback = 72 * time.Hour
)

// RecoverDeliveriesInput starts or continues a delivery recovery run.
type RecoverDeliveriesInput struct {
	PassSettings
	// Overlap: a pass looks at the attempts delivered since the last complete
	// pass's start minus Overlap.
	Overlap time.Duration `json:"overlap,omitempty"`
	// Lookback: how far back the first pass of a hook looks.
	Lookback time.Duration `json:"lookback,omitempty"`
	// Attempts bounds the passes that act on one missing delivery
	// (default activities.DefaultRecoveryAttempts).
	Attempts int       `json:"attempts,omitempty"`
	Carry    PassCarry `json:"carry"`
}

// RecoverDeliveriesWorkflow recovers the webhook deliveries of senders that
// never redeliver on their own (GitHub; SPEC R16, R19: recovery never depends
// on the sender), run by the recover-github schedule. For every GitHub
// endpoint with an API key and a hook it pages through the hook's delivery
// log, newest first, down to the scope's watermark minus the overlap (or the
// lookback on a first pass), and has each delivery whose GUID never reached
// the inbox redelivered by GitHub or fetched and admitted as a backfill
// (RecoverDeliveriesPage). The cursor is checkpointed after every page and
// carried across continue-as-new; the watermark advances only after a full
// pass. Page activities run on the rate-limited provider queue.
func RecoverDeliveriesWorkflow(ctx workflow.Context, in RecoverDeliveriesInput) (PassTotals, error) {
	s := in.withDefaults(ctx)
	overlap, lookback := in.Overlap, in.Lookback
	if overlap <= 0 {
		overlap = DefaultRecoveryOverlap
	}
	if lookback <= 0 {
		lookback = DefaultRecoveryLookback
	}
	p := &pager{kind: activities.PassDeliveries, scopes: activities.PassDeliveries, title: "GitHub delivery recovery", s: s, carry: in.Carry}
	p.begin = func(cp keys.Checkpoint) {
		p.carry.Since = backfillSince(cp, overlap, lookback)
	}
	p.page = func(ctx workflow.Context, pi activities.PageInput) (activities.PageResult, error) {
		var res activities.PageResult
		actx := p.pageActivity(ctx, fmt.Sprintf("deliveries of %s on %s page %d", pi.Scope.Account, pi.Scope.Endpoint, pi.Pages+1))
		err := workflow.ExecuteActivity(actx, onProvider.RecoverDeliveriesPage,
			activities.RecoverPageInput{PageInput: pi, Since: p.carry.Since, Attempts: in.Attempts}).Get(ctx, &res)
		return res, err
	}
	p.next = func(ctx workflow.Context, c PassCarry) error {
		next := in
		next.Carry = c
		return workflow.NewContinueAsNewError(ctx, RecoverDeliveriesWorkflow, next)
	}
	return p.run(ctx)
}
