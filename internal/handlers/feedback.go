package handlers

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/ledger"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
)

// OperationInitialAlert is the business operation of a feedback item's first
// alert. A later escalation would need its own operation (and key).
const OperationInitialAlert = "initial-alert"

// FeedbackAlerts creates one initial alert per feedback item (seed 000,
// last part) and one outbox intent per enabled team destination, the
// destination being part of each intent's operation key.
type FeedbackAlerts struct {
	Store *store.Store
}

// FeedbackAlertKey is the business key of a feedback item's initial alert.
func FeedbackAlertKey(provider, project, env, feedbackID string) string {
	return keys.Join("feedback-alert", provider, project, env, feedbackID, OperationInitialAlert)
}

// Handle applies feedback.created. The source account is the project (the
// endpoint's --account-path), the resource the feedback item.
func (f *FeedbackAlerts) Handle(ctx context.Context, ev *inbox.StoredEvent) (Outcome, error) {
	doc := gjson.ParseBytes(ev.Payload)
	message := doc.Get("data.message").String()
	alert := ledger.FeedbackAlert{
		Provider: ev.Key.Provider, Project: ev.Key.Account, Environment: ev.Key.Environment,
		FeedbackID: ev.ResourceID, Operation: OperationInitialAlert, WorkspaceID: ev.WorkspaceID, EventKey: ev.Key.String(),
	}
	base := FeedbackAlertKey(alert.Provider, alert.Project, alert.Environment, alert.FeedbackID)
	out, err := InPendingTx(ctx, f.Store, ev.Key, func(tx pgx.Tx, row *inbox.StoredEvent) (Outcome, error) {
		created, err := ledger.InsertFeedbackAlertOnce(ctx, tx, alert)
		if err != nil {
			return Outcome{}, err
		}
		if !created {
			return Outcome{Status: keys.StatusDone, Note: "initial alert already exists"}, nil
		}
		dests, err := outbox.ListDestinations(ctx, tx, alert.WorkspaceID, true)
		if err != nil {
			return Outcome{}, err
		}
		out := Outcome{Status: keys.StatusDone, Note: fmt.Sprintf("initial alert created, %d destination(s)", len(dests))}
		for _, d := range dests {
			id, err := outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{
				OperationKey: base + ":" + d.Name, Class: keys.ClassFeedbackAlert, Kind: d.Kind, Destination: d.Name,
				WorkspaceID: alert.WorkspaceID, ResourceKey: row.Resource().String(),
				Payload: map[string]any{
					"type": "feedback.alert", "project": alert.Project, "feedback_id": alert.FeedbackID,
					"workspace": alert.WorkspaceID, "message": message,
				},
			})
			if err != nil {
				return Outcome{}, err
			}
			out.Outbox = append(out.Outbox, id)
		}
		return out, nil
	})
	out.BusinessKey = base
	return out, err
}
