package command

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// runCLI runs `hookinbox workspaces ARGS…` against the database at url.
func runWorkspacesCmd(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("DATABASE_URL", url)
	t.Setenv("HOOKINBOX_SECRETS_KEY", testenv.SecretsKey())
	cmd := newWorkspacesCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

type eraseBundle struct {
	ctx context.Context
	url string
	st  *store.Store
	adm *admission.Admitter
}

func setupErase(t *testing.T) *eraseBundle {
	t.Helper()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	st, err := store.Open(ctx, url, 4)
	require.NoError(t, err)
	st.Keys = testenv.Keys(t)
	t.Cleanup(st.Close)
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "stripe", Provider: "stripe", Environment: "test",
		Account: "acct_1", Secrets: []string{"whsec_erase"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "stripe", "acct_1", "ws_1"))
	require.NoError(t, records.SetWorkspaceEmail(ctx, st.Pool, "ws_1", "billing@ws1.example"))
	require.NoError(t, outbox.UpsertDestination(ctx, st.Pool, st.Keys, outbox.Destination{WorkspaceID: "ws_1", Name: "team", Kind: "email", Target: "team@ws1.example", Enabled: true}))
	return &eraseBundle{ctx: ctx, url: url, st: st, adm: admission.New(admission.Options{Routes: routestest.Builtin(), Store: st, Tolerance: 5 * time.Minute})}
}

// deliver admits a signed Stripe delivery through the intake's own path.
func (b *eraseBundle) deliver(t *testing.T, body []byte) admission.Result {
	t.Helper()
	ep, err := b.adm.Endpoint(b.ctx, "stripe")
	require.NoError(t, err)
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_erase", Timestamp: time.Now()})
	res, err := b.adm.Admit(b.ctx, ep, admission.Delivery{Header: http.Header{"Stripe-Signature": {p.Header}}, Body: body}, keys.OriginWebhook)
	require.NoError(t, err)
	return res
}

func (b *eraseBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, sql).Scan(&n))
	return n
}

// Erase, then redeliver, then count: the payloads and addresses are gone,
// the keys, records and balances stay, and a redelivery of an erased event
// is a duplicate that changes nothing.
func TestWorkspacesEraseThenRedeliverThenCount(t *testing.T) {
	b := setupErase(t)
	paid := stripeBody("evt_paid_1", "invoice.paid", "invoice", "in_1", "")
	require.Equal(t, admission.Accepted, b.deliver(t, paid).Outcome)
	// The same event id with another body: quarantined, original kept.
	other := bytes.Replace(paid, []byte(secretMarker), []byte("OTHER-"+secretMarker), 1)
	require.Equal(t, admission.Quarantined, b.deliver(t, other).Outcome)
	// An effect and its confirmation, as the handler would commit them.
	require.NoError(t, b.st.Tx(b.ctx, func(tx pgx.Tx) error {
		if _, _, err := ledger.GrantCreditsOnce(b.ctx, tx, ledger.CreditGrant{Provider: "stripe", Account: "acct_1", Environment: "test",
			InvoiceID: "in_1", Operation: "initial-credit-grant", WorkspaceID: "ws_1", Credits: 100, AmountPaid: 2000, Currency: "usd",
			EventKey: "stripe/acct_1/test/evt_paid_1"}); err != nil {
			return err
		}
		_, err := outbox.InsertOutbox(b.ctx, tx, outbox.OutboxIntent{OperationKey: "grant-in_1:confirmation", Class: keys.ClassCreditsConfirmation,
			Kind: "email", Destination: "billing@ws1.example", WorkspaceID: "ws_1", ResourceKey: "stripe/acct_1/test/invoice/in_1",
			Payload: map[string]any{"to": "billing@ws1.example", "text": secretMarker}})
		if err != nil {
			return err
		}
		_, err = outbox.InsertOutbox(b.ctx, tx, outbox.OutboxIntent{OperationKey: "alert-fb_1:team", Class: keys.ClassFeedbackAlert,
			Kind: "email", Destination: "team", WorkspaceID: "ws_1", ResourceKey: "standard/proj/test/feedback/fb_1",
			Payload: map[string]any{"message": "the mobile app crashes " + secretMarker}})
		return err
	}))
	_, err := inbox.CompleteInboxEvent(b.ctx, b.st.Pool, keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: "evt_paid_1"}, keys.StatusDone, "granted")
	require.NoError(t, err)

	out, err := runWorkspacesCmd(t, b.url, "erase", "--workspace", "ws_1", "--reason", "GDPR request 1", "--by", "dpo", "--output", "json")
	require.NoError(t, err, out)
	var res struct {
		Counts records.ErasureCounts `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, records.ErasureCounts{InboxPayloads: 1, QuarantinePayloads: 1, OutboxPayloads: 2, FeedbackAlertTexts: 1,
		OutboxStopped: 2, EmailAddresses: 2}, res.Counts)

	// Redeliver the erased event: recognized as a duplicate, nothing changes.
	again := b.deliver(t, paid)
	require.Equal(t, admission.Duplicate, again.Outcome)
	require.Equal(t, keys.StatusDone, again.Status)

	// Count: no stored byte of the payloads or addresses is left anywhere.
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE payload IS NOT NULL`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM inbox_quarantine WHERE payload IS NOT NULL`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM outbox WHERE payload::text LIKE '%`+secretMarker+`%' OR destination LIKE '%ws1.example%'`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM workspaces WHERE email IS NOT NULL`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM team_destinations WHERE target LIKE '%ws1.example%'`))
	// What keeps effects unrepeatable stays.
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_inbox WHERE event_id = 'evt_paid_1' AND body_sha256 IS NOT NULL AND status = 'done'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM credit_grants WHERE workspace_id = 'ws_1'`))
	require.Equal(t, 100, b.count(t, `SELECT credits_balance FROM workspaces WHERE id = 'ws_1'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM inbox_quarantine`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM outbox WHERE status = 'failed'`), "unsent intents stopped, not sent to erased addresses")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM operator_actions WHERE action = 'workspace_erase' AND target = 'workspace:ws_1' AND actor = 'dpo'`))

	// Erasing again finds nothing left (and is audited too).
	out, err = runWorkspacesCmd(t, b.url, "erase", "--workspace", "ws_1", "--reason", "GDPR request 1, again", "--by", "dpo", "--output", "json")
	require.NoError(t, err, out)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, records.ErasureCounts{}, res.Counts)

	_, err = runWorkspacesCmd(t, b.url, "erase", "--workspace", "ws_nope", "--reason", "x")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestWorkspacesAdjustOncePerOperationID(t *testing.T) {
	b := setupErase(t)
	out, err := runWorkspacesCmd(t, b.url, "adjust", "--workspace", "ws_1", "--credits", "+50", "--operation-id", "TICKET-1", "--reason", "goodwill", "--by", "alice")
	require.NoError(t, err, out)
	require.Contains(t, out, "adjusted")
	out, err = runWorkspacesCmd(t, b.url, "adjust", "--workspace", "ws_1", "--credits", "+50", "--operation-id", "TICKET-1", "--reason", "goodwill", "--by", "alice")
	require.NoError(t, err, out)
	require.Contains(t, out, "already applied (nothing changed)")
	_, err = runWorkspacesCmd(t, b.url, "adjust", "--workspace", "ws_1", "--credits", "-7", "--operation-id", "TICKET-1", "--reason", "typo", "--by", "alice")
	require.ErrorContains(t, err, "nothing changed")
	out, err = runWorkspacesCmd(t, b.url, "adjust", "--workspace", "ws_1", "--credits", "-80", "--operation-id", "TICKET-2", "--reason", "refund",
		"--by", "alice", "--policy", "clamp", "--output", "json")
	require.NoError(t, err, out)
	require.True(t, strings.Contains(out, `"decision":"clamped"`) || strings.Contains(out, `"decision": "clamped"`), out)
	require.Equal(t, 0, b.count(t, `SELECT credits_balance FROM workspaces WHERE id = 'ws_1'`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM operator_actions WHERE action = 'workspace_adjust'`))
	_, err = runWorkspacesCmd(t, b.url, "adjust", "--workspace", "ws_1", "--credits", "0", "--operation-id", "T-3", "--reason", "x")
	require.Error(t, err)
}
