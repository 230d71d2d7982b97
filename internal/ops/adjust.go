package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/records"
)

// The operator's correction of a balance: the credits ledger's own
// once-per-key adjustment (domains/ledger, as credit notes use it) and its
// audit entry, in one transaction.

// operatorAdjustment is an operator's correction of a balance.
type operatorAdjustment struct {
	Workspace   string
	Credits     int64
	OperationID string
	Actor       string
	Reason      string
	Policy      string
}

// adjustResult is what an operator correction did.
type adjustResult struct {
	// Adjusted: this call changed the balance (false: the operation id was
	// already used, and nothing changed).
	Adjusted   bool
	Adjustment ledger.CreditAdjustment
	// Mismatch says how a repeated operation id differs from the first use
	// ("" when it asks for the same thing).
	Mismatch string
	ActionID int64
}

// adjustWorkspace applies an operator correction through the same path as
// credit reversals (business key: the operation id; negative-balance policy)
// and audits it in operator_actions, in one transaction. A repeated
// operation id changes nothing and records nothing.
func adjustWorkspace(ctx context.Context, s *store.Store, o operatorAdjustment) (adjustResult, error) {
	switch {
	case strings.TrimSpace(o.Workspace) == "", strings.TrimSpace(o.OperationID) == "":
		return adjustResult{}, errors.New("adjust: workspace and operation id are required")
	case strings.TrimSpace(o.Actor) == "", strings.TrimSpace(o.Reason) == "":
		return adjustResult{}, errors.New("adjust: who and why are required")
	case o.Credits == 0:
		return adjustResult{}, errors.New("adjust: credits must not be 0")
	}
	var res adjustResult
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		a := ledger.CreditAdjustment{
			Provider: ledger.ProviderOperator, Reference: o.OperationID, Operation: ledger.OperationOperatorAdjustment,
			WorkspaceID: o.Workspace, Requested: o.Credits, EventKey: "operator:" + o.OperationID,
			Detail: map[string]any{"actor": o.Actor, "reason": o.Reason},
		}
		adjusted, prior, err := ledger.AdjustCreditsOnce(ctx, tx, &a, o.Policy)
		if err != nil {
			return err
		}
		if !adjusted {
			res.Adjustment = *prior
			if prior.WorkspaceID != o.Workspace || prior.Requested != o.Credits {
				res.Mismatch = fmt.Sprintf("operation %s was %+d credits for workspace %s; this asks %+d for %s",
					o.OperationID, prior.Requested, prior.WorkspaceID, o.Credits, o.Workspace)
			}
			return nil
		}
		res.Adjusted, res.Adjustment = true, a
		act := store.OperatorAction{Actor: o.Actor, Action: records.ActionWorkspaceAdjust, Target: records.WorkspaceTarget(o.Workspace), Reason: o.Reason,
			Details: map[string]any{"operation_id": o.OperationID, "requested": a.Requested, "applied": a.Applied,
				"shortfall": a.Shortfall, "policy": a.Policy, "decision": a.Decision,
				"balance_before": a.BalanceBefore, "balance_after": a.BalanceAfter}}
		res.ActionID, err = store.InsertOperatorAction(ctx, tx, &act)
		return err
	})
	return res, err
}
