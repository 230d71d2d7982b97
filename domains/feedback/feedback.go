// Package feedback is hookinbox's built-in feedback alerts domain (seed 000,
// last part): every new feedback item from a feedback tool (a Standard
// Webhooks sender) creates one initial alert, once per item however many
// deliveries mention it, with one outbox intent per enabled team
// destination of its workspace. It is written on the public API alone.
package feedback

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/feedback/schema"
)

// Name is the handler's name: its metrics label and inbox route.
const Name = "feedback_alerts"

// ClassAlert is the outbox class of an alert's intents.
const ClassAlert = "feedback_alert"

// OperationInitialAlert is the business operation of a feedback item's first
// alert. A later escalation would need its own operation (and key).
const OperationInitialAlert = "initial-alert"

// Register adds the feedback domain to app: its table (package schema) and
// the feedback.created handler.
func Register(app *hookinbox.App) {
	// The domain's own table, its migration set (schema).
	app.Use(hookinbox.WithMigrations(schema.Name, schema.FS(), schema.Tables()...))
	app.OutboxClass(ClassAlert, hookinbox.AcceptDuplicate) // an alert twice beats none
	app.Handle("standard", "feedback.created", Alerts{}, hookinbox.Name(Name))
}

// AlertKey is the business key of a feedback item's initial alert.
func AlertKey(provider, project, env, feedbackID string) string {
	return hookinbox.Key("feedback-alert", provider, project, env, feedbackID, OperationInitialAlert)
}

// Alerts creates one initial alert per feedback item and one outbox intent
// per enabled team destination, the destination being part of each
// intent's operation key.
type Alerts struct{}

// Handle applies feedback.created. The source account is the project (the
// endpoint's --account-path), the resource the feedback item.
func (Alerts) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	message := gjson.GetBytes(ev.Payload, "data.message").String()
	project, env, item := ev.Key.Account, ev.Key.Environment, ev.Resource.ID
	base := AlertKey(ev.Key.Provider, project, env, item)
	res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		created, err := insertOnce(ctx, tx.Conn(), ev, OperationInitialAlert)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if !created {
			return hookinbox.Result{Note: "initial alert already exists"}, nil
		}
		dests, err := tx.Destinations(ctx, ev.Workspace)
		if err != nil {
			return hookinbox.Result{}, err
		}
		for _, d := range dests {
			if _, err := tx.Send(ctx, hookinbox.Intent{
				OperationKey: base + ":" + d.Name, Class: ClassAlert, Kind: d.Kind, Destination: d.Name,
				Payload: map[string]any{
					"type": "feedback.alert", "project": project, "feedback_id": item,
					"workspace": ev.Workspace, "message": message,
				},
			}); err != nil {
				return hookinbox.Result{}, err
			}
		}
		return hookinbox.Result{Note: fmt.Sprintf("initial alert created, %d destination(s)", len(dests))}, nil
	})
	res.BusinessKey = base
	return res, err
}

// insertOnce inserts the item's alert if its business key (provider,
// project, environment, item, operation) is absent and reports whether it
// did.
func insertOnce(ctx context.Context, tx pgx.Tx, ev *hookinbox.Event, operation string) (bool, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO feedback_alerts (provider, project, environment, feedback_id, operation, workspace_id, event_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT ON CONSTRAINT feedback_alerts_business_key DO NOTHING`,
		ev.Key.Provider, ev.Key.Account, ev.Key.Environment, ev.Resource.ID, operation, ev.Workspace, ev.Key.String())
	if err != nil {
		return false, fmt.Errorf("insert feedback alert %s: %w", ev.Resource.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}
