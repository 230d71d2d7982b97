// Package ledger is the credits ledger of hookinbox's built-in credits
// domain: a workspace's balance (workspaces.credits_balance), the initial
// grant of each paid invoice (credit_grants) and every other change to it
// (credit_adjustments: a credit note's reversal, its void, an operator's
// correction), each once under its UNIQUE business key and in the caller's
// transaction, with the negative-balance policy. The credits handlers
// (domains/credits) and the operator's `workspaces adjust` both write
// through it. It is plain SQL over pgx: it imports no hookinbox package,
// so a team's own module may use it too.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookinbox/hookinbox/providers"
)

// DB is a pool, a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrNotFound is the answer when the workspace, grant or adjustment asked
// about does not exist. It is hookinbox's not-found kind (errors.Is matches
// hookinbox.ErrNotFound).
var ErrNotFound = providers.ErrNotFound

// The negative-balance policies: what a change that would take a
// workspace's balance below zero does (HOOKINBOX_NEGATIVE_BALANCE_POLICY).
const (
	// PolicyAllow applies the change; the balance goes negative (default).
	PolicyAllow = "allow"
	// PolicyClamp takes back only down to zero and records the shortfall.
	PolicyClamp = "clamp"
	// PolicyHold changes nothing and records the change held for review.
	PolicyHold = "hold"
)

// ParsePolicy checks a negative-balance policy ("" is PolicyAllow).
func ParsePolicy(p string) (string, error) {
	switch p {
	case "":
		return PolicyAllow, nil
	case PolicyAllow, PolicyClamp, PolicyHold:
		return p, nil
	}
	return "", fmt.Errorf("%w %q: allow, clamp or hold", ErrUnknownPolicy, p)
}

func interpret(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// This file holds the balance changes that are not initial grants (seed
// 000: refunds and corrections are operations of their own): a credit
// note's reversal, the void that gives it back, and an operator's
// correction. Each is one row of credit_adjustments under its own UNIQUE
// business key, and changes the balance in the same statement sequence, once.

// Adjustment operations (credit_adjustments.operation).
const (
	OperationCreditReversal     = "credit-reversal"
	OperationCreditReversalVoid = "credit-reversal-void"
	OperationOperatorAdjustment = "operator-adjustment"
)

// ProviderOperator is the provider part of an operator correction's key.
const ProviderOperator = "operator"

// Decisions of the negative-balance policy (credit_adjustments.decision).
const (
	DecisionApplied         = "applied"
	DecisionAllowedNegative = "allowed_negative"
	DecisionClamped         = "clamped"
	DecisionHeld            = "held"
)

// CreditAdjustment is one change to a balance other than an initial grant.
type CreditAdjustment struct {
	ID          int64
	Provider    string
	Account     string
	Environment string
	InvoiceID   string
	// Reference is the credit note id or the operator's operation id.
	Reference   string
	Operation   string
	WorkspaceID string
	// Requested is the change asked for (negative: taken back); Applied the
	// change made to the balance; Shortfall what a clamp left untaken.
	Requested     int64
	Applied       int64
	Shortfall     int64
	Policy        string
	Decision      string
	BalanceBefore int64
	BalanceAfter  int64
	Detail        map[string]any
	EventKey      string
	CreatedAt     time.Time
}

// ErrUnknownPolicy refuses a negative-balance policy that is not allow, clamp or hold.
var ErrUnknownPolicy = errors.New("unknown negative-balance policy")

// decide applies the negative-balance policy to a change of requested
// credits on a balance: what is applied, what a clamp leaves untaken, and
// the decision to record.
func decide(policy string, balance, requested int64) (applied, shortfall int64, decision string, err error) {
	if requested >= 0 || balance+requested >= 0 {
		return requested, 0, DecisionApplied, nil
	}
	switch policy {
	case PolicyAllow:
		return requested, 0, DecisionAllowedNegative, nil
	case PolicyClamp:
		take := min(-requested, max(balance, 0))
		return -take, -requested - take, DecisionClamped, nil
	case PolicyHold:
		return 0, 0, DecisionHeld, nil
	}
	return 0, 0, "", fmt.Errorf("%w %q", ErrUnknownPolicy, policy)
}

const adjustmentColumns = `id, provider, source_account, environment, invoice_id, reference, operation, workspace_id,
	requested, applied, shortfall, policy, decision, balance_before, balance_after, detail, event_key, created_at`

func scanAdjustment(row pgx.Row) (*CreditAdjustment, error) {
	var a CreditAdjustment
	var detail []byte
	err := row.Scan(&a.ID, &a.Provider, &a.Account, &a.Environment, &a.InvoiceID, &a.Reference, &a.Operation,
		&a.WorkspaceID, &a.Requested, &a.Applied, &a.Shortfall, &a.Policy, &a.Decision, &a.BalanceBefore,
		&a.BalanceAfter, &detail, &a.EventKey, &a.CreatedAt)
	if err != nil {
		return nil, interpret(err)
	}
	if len(detail) > 0 {
		if err := json.Unmarshal(detail, &a.Detail); err != nil {
			return nil, fmt.Errorf("adjustment %d: detail: %w", a.ID, err)
		}
	}
	return &a, nil
}

// GetAdjustment reads the adjustment of a business key (ErrNotFound when
// there is none).
func GetAdjustment(ctx context.Context, db DB, provider, account, env, invoice, reference, operation string) (*CreditAdjustment, error) {
	a, err := scanAdjustment(db.QueryRow(ctx, `SELECT `+adjustmentColumns+` FROM credit_adjustments
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND invoice_id = $4
		  AND reference = $5 AND operation = $6`, provider, account, env, invoice, reference, operation))
	if err != nil {
		return nil, fmt.Errorf("adjustment %s %s: %w", reference, operation, err)
	}
	return a, nil
}

// ListAdjustments returns a workspace's adjustments, oldest first.
func ListAdjustments(ctx context.Context, db DB, workspace string) ([]CreditAdjustment, error) {
	rows, err := db.Query(ctx, `SELECT `+adjustmentColumns+` FROM credit_adjustments
		WHERE workspace_id = $1 ORDER BY id`, workspace)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []CreditAdjustment
	for rows.Next() {
		a, err := scanAdjustment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

// AdjustCreditsOnce records adjustment a under its business key and changes
// the workspace's balance by what policy allows of a.Requested, inside tx,
// only if the key is absent. The workspace row is locked first, so the
// balance the policy reads is the one the change applies to. It reports
// whether it adjusted; when it did not, it returns the existing row so the
// caller can check it is the same operation. On success a is filled in
// (applied, decision, balances).
func AdjustCreditsOnce(ctx context.Context, tx pgx.Tx, a *CreditAdjustment, policy string) (adjusted bool, existing *CreditAdjustment, err error) {
	var balance int64
	if err := tx.QueryRow(ctx, `SELECT credits_balance FROM workspaces WHERE id = $1 FOR UPDATE`, a.WorkspaceID).Scan(&balance); err != nil {
		return false, nil, fmt.Errorf("lock workspace %s: %w", a.WorkspaceID, interpret(err))
	}
	prior, err := GetAdjustment(ctx, tx, a.Provider, a.Account, a.Environment, a.InvoiceID, a.Reference, a.Operation)
	switch {
	case err == nil:
		return false, prior, nil
	case !errors.Is(err, ErrNotFound):
		return false, nil, err
	}
	applied, shortfall, decision, err := decide(policy, balance, a.Requested)
	if err != nil {
		return false, nil, err
	}
	detail := a.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return false, nil, err
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO credit_adjustments (provider, source_account, environment, invoice_id, reference, operation,
			workspace_id, requested, applied, shortfall, policy, decision, balance_before, balance_after, detail, event_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		ON CONFLICT ON CONSTRAINT credit_adjustments_business_key DO NOTHING
		RETURNING id, created_at`,
		a.Provider, a.Account, a.Environment, a.InvoiceID, a.Reference, a.Operation, a.WorkspaceID, a.Requested,
		applied, shortfall, policy, decision, balance, balance+applied, raw, a.EventKey).Scan(&a.ID, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another workspace's transaction took the key (the same invoice
		// mapped elsewhere): report it, change nothing.
		prior, err := GetAdjustment(ctx, tx, a.Provider, a.Account, a.Environment, a.InvoiceID, a.Reference, a.Operation)
		return false, prior, err
	}
	if err != nil {
		return false, nil, fmt.Errorf("insert adjustment %s %s: %w", a.Reference, a.Operation, err)
	}
	if applied != 0 {
		if _, err := tx.Exec(ctx, `UPDATE workspaces SET credits_balance = credits_balance + $2 WHERE id = $1`, a.WorkspaceID, applied); err != nil {
			return false, nil, fmt.Errorf("change balance of %s: %w", a.WorkspaceID, err)
		}
	}
	a.Applied, a.Shortfall, a.Policy, a.Decision, a.BalanceBefore, a.BalanceAfter = applied, shortfall, policy, decision, balance, balance+applied
	return true, nil, nil
}

// GetCreditGrant reads the grant of a business key (ErrNotFound when the
// invoice has none).
func GetCreditGrant(ctx context.Context, db DB, provider, account, env, invoice, operation string) (*CreditGrant, error) {
	var e CreditGrant
	err := db.QueryRow(ctx, `
		SELECT id, provider, source_account, environment, invoice_id, operation, workspace_id, credits,
		       amount_paid, currency, event_key, created_at
		  FROM credit_grants
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND invoice_id = $4 AND operation = $5`,
		provider, account, env, invoice, operation).Scan(&e.ID, &e.Provider, &e.Account,
		&e.Environment, &e.InvoiceID, &e.Operation, &e.WorkspaceID, &e.Credits, &e.AmountPaid, &e.Currency, &e.EventKey, &e.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("grant of %s: %w", invoice, interpret(err))
	}
	return &e, nil
}

// CreditGrant is one grant, identified by its business key.
type CreditGrant struct {
	ID          int64
	Provider    string
	Account     string
	Environment string
	InvoiceID   string
	Operation   string
	WorkspaceID string
	Credits     int64
	AmountPaid  int64
	Currency    string
	EventKey    string
	CreatedAt   time.Time
}

// GrantCreditsOnce inserts the grant if its business key is absent and, only
// then, increments the workspace balance atomically, inside tx. It reports
// whether it granted; when it did not, it returns the existing grant so the
// caller can check it matches this operation.
func GrantCreditsOnce(ctx context.Context, tx pgx.Tx, g CreditGrant) (granted bool, existing *CreditGrant, err error) {
	var id int64
	err = tx.QueryRow(ctx, `
		INSERT INTO credit_grants (provider, source_account, environment, invoice_id, operation,
			workspace_id, credits, amount_paid, currency, event_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT ON CONSTRAINT credit_grants_business_key DO NOTHING
		RETURNING id`,
		g.Provider, g.Account, g.Environment, g.InvoiceID, g.Operation, g.WorkspaceID, g.Credits,
		g.AmountPaid, g.Currency, g.EventKey).Scan(&id)
	if err == nil {
		tag, err := tx.Exec(ctx, `UPDATE workspaces SET credits_balance = credits_balance + $2 WHERE id = $1`, g.WorkspaceID, g.Credits)
		if err != nil {
			return false, nil, fmt.Errorf("increment balance of %s: %w", g.WorkspaceID, err)
		}
		if tag.RowsAffected() != 1 {
			return false, nil, fmt.Errorf("increment balance: workspace %s: %w", g.WorkspaceID, ErrNotFound)
		}
		return true, nil, nil
	}
	if err != pgx.ErrNoRows {
		return false, nil, fmt.Errorf("insert credit grant %s: %w", g.InvoiceID, err)
	}
	var e CreditGrant
	err = tx.QueryRow(ctx, `
		SELECT id, provider, source_account, environment, invoice_id, operation, workspace_id, credits,
		       amount_paid, currency, event_key, created_at
		  FROM credit_grants
		 WHERE provider = $1 AND source_account = $2 AND environment = $3 AND invoice_id = $4 AND operation = $5`,
		g.Provider, g.Account, g.Environment, g.InvoiceID, g.Operation).Scan(&e.ID, &e.Provider, &e.Account,
		&e.Environment, &e.InvoiceID, &e.Operation, &e.WorkspaceID, &e.Credits, &e.AmountPaid, &e.Currency, &e.EventKey, &e.CreatedAt)
	if err != nil {
		return false, nil, fmt.Errorf("read existing grant %s: %w", g.InvoiceID, interpret(err))
	}
	return false, &e, nil
}
