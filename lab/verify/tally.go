package verify

import (
	"context"
	"fmt"

	"github.com/hookinbox/hookinbox/internal/store"
)

// Tally is what the database holds for one Stripe account, one feedback
// project and the workspace they are linked to, in numbers: the receiver's
// side of the demo's side-by-side table.
type Tally struct {
	Grants      int64 // credit grants of the account
	Reversals   int64 // credit-note reversals of the account
	Voids       int64 // of which given back by a void
	Alerts      int64 // feedback alerts of the project
	Quarantined int64 // quarantined deliveries of either
	Backfilled  int64 // inbox rows of the account written by the facts backfill
	InboxRows   int64 // inbox rows of either
	InboxDone   int64 // of which done
	Balance     int64 // the workspace's credit balance
}

// TallyRun counts what the receiver holds for account, project and
// workspace in one statement, so the numbers are of one snapshot.
func TallyRun(ctx context.Context, db store.DB, account, project, workspace string) (Tally, error) {
	var t Tally
	err := db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM credit_grants WHERE source_account = $1),
		       (SELECT count(*) FROM credit_adjustments WHERE source_account = $1 AND operation = 'credit-reversal'),
		       (SELECT count(*) FROM credit_adjustments WHERE source_account = $1 AND operation = 'credit-reversal-void'),
		       (SELECT count(*) FROM feedback_alerts WHERE project = $2),
		       (SELECT count(*) FROM inbox_quarantine WHERE source_account = ANY(ARRAY[$1, $2])),
		       (SELECT count(*) FROM webhook_inbox WHERE source_account = $1 AND origin = 'backfill'),
		       (SELECT count(*) FROM webhook_inbox WHERE source_account = ANY(ARRAY[$1, $2])),
		       (SELECT count(*) FROM webhook_inbox WHERE source_account = ANY(ARRAY[$1, $2]) AND status = 'done'),
		       (SELECT credits_balance FROM workspaces WHERE id = $3)`,
		account, project, workspace).Scan(&t.Grants, &t.Reversals, &t.Voids, &t.Alerts, &t.Quarantined, &t.Backfilled, &t.InboxRows, &t.InboxDone, &t.Balance)
	if err != nil {
		return Tally{}, fmt.Errorf("read the receiver's state: %w", err)
	}
	return t, nil
}
