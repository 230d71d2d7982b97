package records

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/store"
)

// Erasure: a tenant's stored payloads and personal data are redacted on
// request, while what keeps effects unrepeatable stays: event keys and body
// hashes (a later redelivery is still a duplicate), business records and
// their keys, balances, and the lineage skeleton (which event produced which
// effect, statuses, attempts, operator actions).

// RedactedEmail replaces an erased email address.
const RedactedEmail = "redacted@erased.invalid"

// ErasureCounts says what an erasure redacted.
type ErasureCounts struct {
	InboxPayloads      int64 `json:"inbox_payloads"`
	QuarantinePayloads int64 `json:"quarantine_payloads"`
	OutboxPayloads     int64 `json:"outbox_payloads"`
	// FeedbackAlertTexts are the feedback messages carried by alert intents
	// (counted among OutboxPayloads too).
	FeedbackAlertTexts int64 `json:"feedback_alert_texts"`
	// OutboxStopped are unsent intents ended (failed) because their
	// destination or content was erased.
	OutboxStopped  int64 `json:"outbox_stopped"`
	EmailAddresses int64 `json:"email_addresses"`
}

// EraseRequest names the workspace to erase and who asks why.
type EraseRequest struct {
	Workspace string
	Actor     string
	Reason    string
}

// EraseResult is what an erasure did.
type EraseResult struct {
	Counts   ErasureCounts
	ActionID int64
}

// EraseWorkspace redacts every stored payload of a workspace in one
// transaction: inbox bodies (the hash stays), quarantine bodies of its
// linked accounts, outbox payloads (unsent ones are stopped), the feedback
// texts they carried, and its email addresses (the workspace's, its email
// destinations', the outbox's). It keeps keys, business records, balances
// and the lineage, and audits the act with the counts. Erasing again
// finds nothing left and records that too.
func EraseWorkspace(ctx context.Context, s *store.Store, req EraseRequest) (EraseResult, error) {
	if strings.TrimSpace(req.Workspace) == "" {
		return EraseResult{}, errors.New("erase: workspace is required")
	}
	if strings.TrimSpace(req.Actor) == "" || strings.TrimSpace(req.Reason) == "" {
		return EraseResult{}, errors.New("erase: who and why are required")
	}
	var res EraseResult
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, req.Workspace).Scan(&one); err != nil {
			return fmt.Errorf("erase: workspace %s: %w", req.Workspace, store.Interpret(err))
		}
		c := &res.Counts
		steps := []struct {
			n   *int64
			sql string
		}{
			// Payloads are written, never read: what is left of one comes
			// from the *_payload_size views (the console's role may not
			// read a payload).
			{&c.InboxPayloads, `
				UPDATE webhook_inbox i SET payload = NULL FROM webhook_inbox_payload_size s
				 WHERE i.workspace_id = $1 AND s.id = i.id AND s.payload_bytes IS NOT NULL`},
			{&c.QuarantinePayloads, `
				UPDATE inbox_quarantine q SET payload = NULL
				  FROM account_links l, inbox_quarantine_payload_size s
				 WHERE l.workspace_id = $1 AND q.endpoint_slug = l.endpoint_slug AND q.source_account = l.account
				   AND s.id = q.id AND s.payload_bytes IS NOT NULL`},
			{&c.FeedbackAlertTexts, `
				SELECT count(*) FROM outbox o JOIN outbox_payload_size s ON s.id = o.id
				 WHERE o.workspace_id = $1 AND s.carries_message`},
			{&c.OutboxStopped, `
				UPDATE outbox SET status = 'failed', last_error = 'erased: the workspace''s data was erased before it was sent'
				 WHERE workspace_id = $1 AND status IN ('pending', 'uncertain', 'held_for_review')`},
			{&c.OutboxPayloads, `
				UPDATE outbox o SET payload = '{"redacted": true}'::jsonb,
				       destination = CASE WHEN o.destination LIKE '%@%' THEN '` + RedactedEmail + `' ELSE o.destination END
				  FROM outbox_payload_size s
				 WHERE o.workspace_id = $1 AND s.id = o.id AND NOT s.redacted`},
		}
		for _, st := range steps {
			if strings.HasPrefix(strings.TrimSpace(st.sql), "SELECT") {
				if err := tx.QueryRow(ctx, st.sql, req.Workspace).Scan(st.n); err != nil {
					return fmt.Errorf("erase %s: %w", req.Workspace, err)
				}
				continue
			}
			tag, err := tx.Exec(ctx, st.sql, req.Workspace)
			if err != nil {
				return fmt.Errorf("erase %s: %w", req.Workspace, err)
			}
			*st.n = tag.RowsAffected()
		}
		tag, err := tx.Exec(ctx, `UPDATE workspaces SET email = NULL WHERE id = $1 AND email IS NOT NULL`, req.Workspace)
		if err != nil {
			return fmt.Errorf("erase %s: email: %w", req.Workspace, err)
		}
		c.EmailAddresses = tag.RowsAffected()
		// Through a function run as the owner (migration 0021): the
		// console's role may not UPDATE team_destinations, so it can point
		// none elsewhere; the function writes RedactedEmail only.
		var dests int64
		if err := tx.QueryRow(ctx, `SELECT hookinbox_erase_destinations($1)`, req.Workspace).Scan(&dests); err != nil {
			return fmt.Errorf("erase %s: destinations: %w", req.Workspace, err)
		}
		c.EmailAddresses += dests
		act := store.OperatorAction{Actor: req.Actor, Action: ActionWorkspaceErase, Target: WorkspaceTarget(req.Workspace), Reason: req.Reason,
			Details: map[string]any{"counts": c}}
		res.ActionID, err = store.InsertOperatorAction(ctx, tx, &act)
		return err
	})
	return res, err
}
