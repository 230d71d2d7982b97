package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/access"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/storetest"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// roleBundle is one fresh database (its grants come from the template,
// applied by ApplyRoles) with the owner's store and fixtures: an endpoint
// with an API key, one inbox row, one quarantine entry, one outbox row.
type roleBundle struct {
	ctx   context.Context
	url   string
	owner *store.Store
	key   keys.Event
	qid   int64
	oid   int64
}

func roleSetup(t *testing.T) *roleBundle {
	t.Helper()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	owner, err := store.Open(ctx, url, 4)
	require.NoError(t, err)
	t.Cleanup(owner.Close)
	owner.Keys = testenv.Keys(t)
	require.NoError(t, endpoints.InsertEndpoint(ctx, owner, endpoints.NewEndpoint{Slug: "ep", Provider: "stripe", Environment: "test",
		APIBaseURL: "http://api.example", APIKey: "sk_test_secret", Secrets: []string{"whsec_a"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, owner, "ep", "acct_1", "ws_1"))
	ev := storetest.Event("evt_fixture", `{"id":"evt_fixture","card":"4242"}`)
	_, err = inbox.InsertInboxEvent(ctx, owner.Pool, ev)
	require.NoError(t, err)
	_, err = inbox.InsertQuarantine(ctx, owner.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe",
		EventID: "evt_bad", Reason: inbox.ReasonMalformed, Payload: []byte("not json"), BodySHA256: []byte{1}})
	require.NoError(t, err)
	qs, err := inbox.ListQuarantine(ctx, owner.Pool, inbox.QuarantineFilter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, qs, 1)
	var oid int64
	require.NoError(t, owner.Tx(ctx, func(tx pgx.Tx) error {
		oid, err = outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{OperationKey: "op:1", Class: "confirmation", Kind: "email",
			Destination: "a@example.com", WorkspaceID: "ws_1", ResourceKey: "r", Payload: map[string]string{"to": "a@example.com"}})
		return err
	}))
	return &roleBundle{ctx: ctx, url: url, owner: owner, key: ev.Key, qid: qs[0].ID, oid: oid}
}

// as opens a store connecting as role.
func (b *roleBundle) as(t *testing.T, role string) *store.Store {
	t.Helper()
	s, err := store.Open(b.ctx, testenv.RoleURL(t, b.url, role), 4)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	s.Keys = b.owner.Keys
	return s
}

func requireDenied(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.True(t, store.IsPermissionDenied(err), "%s: want permission denied, got %v", what, err)
}

// denied runs sql on st and requires a permission error.
func denied(t *testing.T, ctx context.Context, st *store.Store, sql string, args ...any) {
	t.Helper()
	_, err := st.Pool.Exec(ctx, sql, args...)
	requireDenied(t, err, sql)
}

func TestIntakeRoleCannotReadAPIKeysOrPayloads(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	in := b.as(t, store.RoleIntake)

	for _, sql := range []string{
		`SELECT api_key FROM endpoints`,
		`SELECT api_key_sealed FROM endpoints`,
		`SELECT api_key_key_id FROM endpoints`,
		`SELECT api_base_url FROM endpoints`,
		`SELECT * FROM endpoints`,
		`SELECT secret_fingerprint FROM endpoint_secrets`,
		`SELECT payload FROM webhook_inbox`,
		`SELECT * FROM webhook_inbox`,
		`SELECT payload FROM inbox_quarantine`,
		`SELECT id, reason FROM inbox_quarantine`,
		`SELECT payload FROM outbox`,
		`SELECT payload_bytes FROM webhook_inbox_payload_size`,
		`SELECT * FROM credit_grants`,
		`SELECT * FROM team_destinations`,
		`SELECT * FROM operator_actions`,
		`UPDATE webhook_inbox SET status = 'done'`,
		`DELETE FROM webhook_inbox`,
		`UPDATE endpoints SET api_key = 'x'`,
		`INSERT INTO endpoint_secrets (endpoint_slug, secret) VALUES ('ep', 'mine')`,
		`UPDATE workspaces SET credits_balance = 1000000`,
	} {
		denied(t, b.ctx, in, sql)
	}
	// The owner's endpoint query reads the API key: the intake cannot run it.
	_, err := endpoints.GetEndpoint(b.ctx, in, "ep")
	requireDenied(t, err, "GetEndpoint as the intake")
	_, err = inbox.GetInboxEvent(b.ctx, in.Pool, b.key)
	requireDenied(t, err, "GetInboxEvent (reads the payload) as the intake")
}

func TestIntakeRoleCanDoEverythingTheIntakeDoes(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	in := b.as(t, store.RoleIntake)
	ctx := b.ctx

	require.NoError(t, in.Ping(ctx))
	ep, err := endpoints.GetIntakeEndpoint(ctx, in, "ep")
	require.NoError(t, err)
	require.Equal(t, "stripe", ep.Provider)
	require.Len(t, ep.Secrets, 1)
	require.Equal(t, "whsec_a", ep.Secrets[0].Value)
	require.Equal(t, map[string]string{"acct_1": "ws_1"}, ep.Links)
	require.Empty(t, ep.APIKey, "never the API key")
	_, err = endpoints.GetIntakeEndpoint(ctx, in, "nope")
	require.ErrorIs(t, err, fault.ErrNotFound)

	ev := storetest.Event("evt_in", `{"id":"evt_in"}`)
	res, err := inbox.InsertInboxEvent(ctx, in.Pool, ev)
	require.NoError(t, err)
	require.Equal(t, inbox.Inserted, res.Outcome)
	res, err = inbox.InsertInboxEvent(ctx, in.Pool, ev)
	require.NoError(t, err)
	require.Equal(t, inbox.Duplicate, res.Outcome)
	require.Equal(t, keys.StatusPending, res.ExistingStatus)
	other := storetest.Event("evt_in", `{"id":"evt_in","changed":true}`)
	res, err = inbox.InsertInboxEvent(ctx, in.Pool, other)
	require.NoError(t, err)
	require.Equal(t, inbox.Conflict, res.Outcome)
	ignored := storetest.Event("evt_ignored", `{}`)
	ignored.Status, ignored.LastError = keys.StatusIgnored, "no handler"
	res, err = inbox.InsertInboxEvent(ctx, in.Pool, ignored)
	require.NoError(t, err)
	require.Equal(t, inbox.Inserted, res.Outcome)

	h := sha256.Sum256([]byte("x"))
	q := &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe", Account: "acct_1", Environment: "test",
		EventID: "evt_in", Reason: inbox.ReasonConflictingDuplicate, Payload: []byte("x"), BodySHA256: h[:],
		Headers: map[string]string{"Stripe-Signature": "t=1,v1=abc"}}
	added, err := inbox.InsertQuarantine(ctx, in.Pool, q)
	require.NoError(t, err)
	require.True(t, added)
	added, err = inbox.InsertQuarantine(ctx, in.Pool, q)
	require.NoError(t, err)
	require.False(t, added, "the same delivery is stored once")

	// What the intake wrote is all there (read as the owner).
	got, err := inbox.GetInboxEvent(ctx, b.owner.Pool, ev.Key)
	require.NoError(t, err)
	require.Equal(t, ev.Payload, got.Payload)
}

func TestOperatorRoleReadsWithoutPayloadsAndCannotWrite(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	op := b.as(t, store.RoleOperator)
	ctx := b.ctx

	evs, err := inbox.ListInboxEvents(ctx, op.Pool, inbox.InboxFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	d, err := inbox.InspectInboxEvent(ctx, op.Pool, b.key, false)
	require.NoError(t, err)
	require.Equal(t, len(`{"id":"evt_fixture","card":"4242"}`), d.PayloadBytes, "the size, from the view")
	require.Nil(t, d.Payload)
	_, err = inbox.InspectInboxEvent(ctx, op.Pool, b.key, true)
	requireDenied(t, err, "inbox show --payload as the operator")
	qs, err := inbox.ListQuarantine(ctx, op.Pool, inbox.QuarantineFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, len("not json"), qs[0].PayloadBytes)
	_, err = inbox.GetQuarantineEntry(ctx, op.Pool, b.qid, false)
	require.NoError(t, err)
	_, err = inbox.GetQuarantineEntry(ctx, op.Pool, b.qid, true)
	requireDenied(t, err, "quarantine show --payload as the operator")
	rows, err := outbox.ListOutbox(ctx, op.Pool, "", 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Nil(t, rows[0].Payload)
	_, err = outbox.GetOutbox(ctx, op.Pool, b.oid)
	requireDenied(t, err, "outbox show (the payload) as the operator")
	_, err = inbox.ReadBacklog(ctx, op.Pool)
	require.NoError(t, err)
	_, err = inbox.ReadTrends(ctx, op.Pool, 24*time.Hour, 15*time.Minute)
	require.NoError(t, err)
	requireDenied(t, inbox.RecordTrendSample(ctx, op.Pool), "the sweeper's trend sample as the operator")
	_, err = store.ListOperatorActions(ctx, op.Pool, b.key.String(), 10)
	require.NoError(t, err)

	for _, sql := range []string{
		`SELECT payload FROM webhook_inbox`,
		`SELECT payload FROM inbox_quarantine`,
		`SELECT payload FROM outbox`,
		`SELECT api_key FROM endpoints`,
		`SELECT api_key_sealed FROM endpoints`,
		`SELECT secret FROM endpoint_secrets`,
		`SELECT secret_sealed FROM endpoint_secrets`,
		`SELECT secret FROM team_destinations`,
		`SELECT secret_sealed FROM team_destinations`,
		`UPDATE webhook_inbox SET status = 'pending'`,
		`DELETE FROM webhook_inbox`,
		`INSERT INTO operator_actions (actor, action, target, reason) VALUES ('me', 'replay', 'x', 'y')`,
		`UPDATE outbox SET status = 'pending'`,
		`UPDATE workspaces SET credits_balance = 1`,
		`DELETE FROM inbox_quarantine`,
	} {
		denied(t, ctx, op, sql)
	}
	_, err = inbox.ResetInboxEvent(ctx, op.Pool, b.key, keys.StatusPending)
	requireDenied(t, err, "replay's reset as the operator")
	requireDenied(t, records.SetWorkspaceEmail(ctx, op.Pool, "ws_1", "x@example.com"), "workspaces set as the operator")
}

var memberSeq atomic.Int64

// A login role that is a member of the operator role reads payloads only
// once it is also granted the payload reader. Role memberships are the
// server's, not the database's, so the test makes its own login role rather
// than granting hookinbox_payload_reader to hookinbox_operator itself.
func TestPayloadReaderGrantedToAnOperatorReadsPayloads(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	alice := fmt.Sprintf("hookinbox_test_operator_%d_%d", os.Getpid(), memberSeq.Add(1))
	admin, err := pgx.Connect(ctx, testenv.AdminURL(t, "postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	create := "CREATE ROLE " + alice + " LOGIN IN ROLE " + store.RoleOperator
	if pw := passwordOf(t, testenv.RoleURL(t, b.url, store.RoleOperator)); pw != "" {
		create += " PASSWORD '" + pw + "'"
	}
	_, err = admin.Exec(ctx, create)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+alice) })

	before := b.as(t, alice)
	_, err = inbox.InspectInboxEvent(ctx, before.Pool, b.key, true)
	requireDenied(t, err, "an operator not granted the payload reader")
	before.Close()

	_, err = admin.Exec(ctx, "GRANT "+store.RolePayloadReader+" TO "+alice)
	require.NoError(t, err)
	op := b.as(t, alice)
	d, err := inbox.InspectInboxEvent(ctx, op.Pool, b.key, true)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"evt_fixture","card":"4242"}`, string(d.Payload))
	q, err := inbox.GetQuarantineEntry(ctx, op.Pool, b.qid, true)
	require.NoError(t, err)
	require.Equal(t, []byte("not json"), q.Payload)
	o, err := outbox.GetOutbox(ctx, op.Pool, b.oid)
	require.NoError(t, err)
	require.JSONEq(t, `{"to":"a@example.com"}`, string(o.Payload))
	// Reading payloads is all the payload reader adds: still no writes, no key.
	denied(t, ctx, op, `UPDATE webhook_inbox SET status = 'pending'`)
	denied(t, ctx, op, `SELECT api_key FROM endpoints`)
}

func passwordOf(t *testing.T, u string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(u)
	require.NoError(t, err)
	return cfg.Password
}

func TestWorkerRoleCannotReadSigningSecretsOrTheAuditLog(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	w := b.as(t, store.RoleWorker)
	ctx := b.ctx

	denied(t, ctx, w, `SELECT secret FROM endpoint_secrets`)
	denied(t, ctx, w, `SELECT secret_sealed FROM endpoint_secrets`)
	denied(t, ctx, w, `SELECT * FROM operator_actions`)
	denied(t, ctx, w, `SELECT payload FROM inbox_quarantine`)
	denied(t, ctx, w, `UPDATE endpoints SET api_key = 'x'`)
	denied(t, ctx, w, `INSERT INTO account_links (endpoint_slug, account, workspace_id) VALUES ('ep', 'acct_evil', 'ws_1')`)
	_, err := endpoints.GetEndpoint(ctx, w, "ep")
	requireDenied(t, err, "GetEndpoint (reads the secrets) as the worker")

	// What the worker's activities read of an endpoint: the API key.
	ep, err := endpoints.GetProviderEndpoint(ctx, w, "ep")
	require.NoError(t, err)
	require.Equal(t, "sk_test_secret", ep.APIKey)
	require.Empty(t, ep.Secrets)
	got, err := inbox.GetInboxEvent(ctx, w.Pool, b.key)
	require.NoError(t, err)
	require.NotEmpty(t, got.Payload, "handlers read the payload")
	_, err = inbox.ReadBacklog(ctx, w.Pool)
	require.NoError(t, err)
}

// Retention's redactions run as the worker: inbox rows, resolved quarantine
// entries (without reading their bodies) and sent outbox rows.
func TestWorkerRoleRunsRetentionRedactions(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	_, err := b.owner.Pool.Exec(ctx, `UPDATE webhook_inbox SET status = 'exhausted',
		received_at = now() - interval '40 days', processed_at = now() - interval '40 days'`)
	require.NoError(t, err)
	_, err = b.owner.Pool.Exec(ctx, `UPDATE inbox_quarantine SET resolved_at = now() - interval '40 days', resolved_by = 'op'`)
	require.NoError(t, err)
	_, err = b.owner.Pool.Exec(ctx, `UPDATE outbox SET status = 'sent', sent_at = now() - interval '40 days'`)
	require.NoError(t, err)
	w := b.as(t, store.RoleWorker)
	const window = 30 * 24 * time.Hour
	for name, redact := range map[string]func(context.Context, store.DB, time.Duration, int) (int64, error){
		"inbox": inbox.RedactInboxPayloads, "quarantine": inbox.RedactResolvedQuarantinePayloads, "outbox": outbox.RedactSentOutboxPayloads,
	} {
		n, err := redact(ctx, w.Pool, window, 10)
		require.NoError(t, err, name)
		require.EqualValues(t, 1, n, name)
	}
	denied(t, ctx, w, `SELECT payload FROM inbox_quarantine`)
	var lineage int
	require.NoError(t, b.owner.Pool.QueryRow(ctx, `SELECT count(*) FROM event_lineage WHERE source = 'inbox' AND payload_redacted_at IS NOT NULL`).Scan(&lineage))
	require.Equal(t, 1, lineage, "the trigger recorded the redaction as the worker")
}

// ApplyRoles and ReapplyGrants converge: a privilege granted by hand is
// revoked, and a column added by a migration is covered by the operator's
// "every column but payload" grant once the grants are re-applied (what
// `hookinbox migrate` does), while the payload stays hidden.
func TestReapplyingGrantsConvergesAndCoversNewColumns(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	_, err := b.owner.Pool.Exec(ctx, `GRANT SELECT ON endpoints TO `+store.RoleIntake)
	require.NoError(t, err)
	_, err = b.owner.Pool.Exec(ctx, `ALTER TABLE webhook_inbox ADD COLUMN extra text`)
	require.NoError(t, err)
	in, op := b.as(t, store.RoleIntake), b.as(t, store.RoleOperator)
	_, err = in.Pool.Exec(ctx, `SELECT api_key FROM endpoints`)
	require.NoError(t, err, "the stray grant works before the re-apply")
	denied(t, ctx, op, `SELECT extra FROM webhook_inbox`)

	roles, n, err := store.ReapplyGrants(ctx, b.owner.Pool)
	require.NoError(t, err)
	require.Equal(t, store.Roles, roles)
	require.Positive(t, n)

	denied(t, ctx, in, `SELECT api_key FROM endpoints`)
	_, err = op.Pool.Exec(ctx, `SELECT extra FROM webhook_inbox`)
	require.NoError(t, err)
	denied(t, ctx, op, `SELECT payload FROM webhook_inbox`)

	// ApplyRoles over existing roles changes none of them and re-applies
	// the same grants: the privileges are identical afterwards.
	before := privileges(t, ctx, b.owner)
	changes, _, err := store.ApplyRoles(ctx, b.owner.Pool, store.RoleOptions{})
	require.NoError(t, err)
	for _, c := range changes {
		require.Equal(t, "unchanged", c.Action, c.Role)
	}
	require.Equal(t, before, privileges(t, ctx, b.owner))
}

// privileges lists every table and column privilege the roles hold here.
func privileges(t *testing.T, ctx context.Context, st *store.Store) []string {
	t.Helper()
	rows, err := st.Pool.Query(ctx, `
		SELECT grantee || ' ' || privilege_type || ' ' || table_name || coalesce('.' || column_name, '')
		  FROM (SELECT grantee, privilege_type, table_name, NULL AS column_name FROM information_schema.role_table_grants
		        UNION ALL
		        SELECT grantee, privilege_type, table_name, column_name FROM information_schema.role_column_grants) g
		 WHERE grantee = ANY($1)
		 ORDER BY 1`, store.Roles)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

// Every table and view of the schema is named by at least one grant, so a
// migration adding one makes its author decide who may use it (a table no
// process may touch is a table nothing needs). Only the migration
// bookkeeping is nobody's. The built-in domains' tables are decided by
// their sets' declarations (testenv.BuiltinDomainTables), not the core's.
func TestEveryRelationIsDecidedInTheGrantList(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	rows, err := st.Pool.Query(context.Background(), `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p') ORDER BY 1`)
	require.NoError(t, err)
	rels, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	named := map[string]bool{}
	for _, g := range store.Grants {
		named[g.Table] = true
	}
	for _, r := range testenv.BuiltinDomainTables() {
		require.False(t, named[r], "%s is a domain's table: its set's declaration grants it, not store.Grants", r)
		named[r] = true
	}
	for _, r := range rels {
		if strings.HasPrefix(r, "schema_version") {
			continue
		}
		require.True(t, named[r], "table %s is in no grant of store.Grants nor of a domain's declaration: decide which roles may use it", r)
	}
}

// The worker's role runs every store function the worker does: handling
// (lock, complete, fail, stop), the three business effects, the outbox,
// the sweepers, reconciliation, backfill's insert and retention.
func TestWorkerRoleCanDoEverythingTheWorkerDoes(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	w := b.as(t, store.RoleWorker)
	ctx := b.ctx
	require.NoError(t, outbox.UpsertDestination(ctx, b.owner.Pool, b.owner.Keys, outbox.Destination{WorkspaceID: "ws_1", Name: "team",
		Kind: "webhook", Target: "http://hooks.example", Secret: "whsec_team", Enabled: true}))

	r := keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}
	batch, err := inbox.LoadPending(ctx, w.Pool, r, 10)
	require.NoError(t, err)
	require.Len(t, batch.Events, 1)
	require.NoError(t, w.Tx(ctx, func(tx pgx.Tx) error {
		ev, err := inbox.LockInboxEvent(ctx, tx, b.key)
		if err != nil {
			return err
		}
		ws, err := records.GetWorkspace(ctx, tx, ev.WorkspaceID)
		if err != nil {
			return err
		}
		granted, _, err := ledger.GrantCreditsOnce(ctx, tx, ledger.CreditGrant{Provider: "stripe", Account: "acct_1",
			Environment: "test", InvoiceID: "in_1", Operation: "initial-credit-grant", WorkspaceID: ws.ID, Credits: 100,
			AmountPaid: 1000, Currency: "usd", EventKey: ev.Key.String()})
		if err != nil || !granted {
			return fmt.Errorf("grant: %v %w", granted, err)
		}
		if _, again, err := ledger.GrantCreditsOnce(ctx, tx, ledger.CreditGrant{Provider: "stripe", Account: "acct_1",
			Environment: "test", InvoiceID: "in_1", Operation: "initial-credit-grant", WorkspaceID: ws.ID, Credits: 100,
			AmountPaid: 1000, Currency: "usd", EventKey: ev.Key.String()}); err != nil || again == nil {
			return fmt.Errorf("grant again: %w", err)
		}
		// The domains' own statements (domains/feedback, subscriptions):
		// the alert's insert once, and the projection writes of the
		// public API (Tx.WriteNewer, Tx.WriteFenced) with their reads.
		if _, err := tx.Exec(ctx, `
			INSERT INTO feedback_alerts (provider, project, environment, feedback_id, operation, workspace_id, event_key)
			VALUES ('standard', 'p', 'test', 'f1', 'initial-alert', $1, 'k')
			ON CONFLICT ON CONSTRAINT feedback_alerts_business_key DO NOTHING`, ws.ID); err != nil {
			return err
		}
		if _, _, err := records.ClaimOnce(ctx, tx, records.Claim{BusinessKey: "bk/1", EventKey: "k", ResourceKey: "r", Handler: "h"}); err != nil {
			return err
		}
		proj := records.ProjectionTable{Name: "subscription_projection", Key: []string{"provider", "source_account", "environment", "resource_id"},
			Version: "provider_version", Seq: "write_seq", Touched: "updated_at", Sticky: []string{"deleted"},
			TerminalColumn: "status", TerminalValue: "canceled"}
		row := map[string]any{"provider": "stripe", "source_account": "acct_1", "environment": "test", "resource_id": "sub_1",
			"workspace_id": ws.ID, "provider_version": int64(1), "state": []byte(`{"status":"active"}`), "status": "active",
			"deleted": false, "access": true, "written_by": "k"}
		if _, err := records.WriteIfNewer(ctx, tx, proj, row); err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRow(ctx, `SELECT write_seq FROM subscription_projection WHERE resource_id = 'sub_1'`).Scan(&seq); err != nil {
			return err
		}
		if _, err := records.WriteFenced(ctx, tx, proj, row, seq); err != nil {
			return err
		}
		if _, err := records.WorkspaceHasAccess(ctx, tx, ws.ID); err != nil {
			return err
		}
		if _, err := outbox.ListDestinations(ctx, tx, ws.ID, true); err != nil {
			return err
		}
		if _, err := outbox.InsertOutbox(ctx, tx, outbox.OutboxIntent{OperationKey: "op:2", Class: "alert", Kind: "webhook",
			Destination: "team", WorkspaceID: ws.ID, ResourceKey: "r", Payload: map[string]string{}}); err != nil {
			return err
		}
		if err := passes.InsertDivergences(ctx, tx, "stripe", "acct_1", "test", "subscription", "sub_1", "test",
			[]keys.Divergence{{Field: "status", LocalValue: "active", ProviderValue: "canceled", Corrected: true}}); err != nil {
			return err
		}
		_, err = inbox.CompleteInboxEvent(ctx, tx, ev.Key, keys.StatusDone, "granted")
		return err
	}))
	require.NoError(t, inbox.RecordInboxFailure(ctx, w.Pool, b.key, "x", time.Now()))
	_, err = inbox.StopInboxEvent(ctx, w.Pool, b.key, keys.StatusFailed, "x")
	require.NoError(t, err)

	o, err := outbox.GetOutbox(ctx, w.Pool, b.oid)
	require.NoError(t, err)
	_, err = outbox.BeginOutboxAttempt(ctx, w.Pool, o.ID, "retry_same_key", time.Now())
	require.NoError(t, err)
	require.NoError(t, outbox.OutboxAttemptFailed(ctx, w.Pool, o.ID, keys.OutboxUncertain, "timeout", time.Now()))
	require.NoError(t, outbox.MarkOutboxSent(ctx, w.Pool, o.ID, "remote", ""))
	_, err = outbox.StopOutbox(ctx, w.Pool, o.ID, keys.OutboxHeld, "x")
	require.NoError(t, err)
	_, err = outbox.UnsentOutbox(ctx, w.Pool, "r", 10)
	require.NoError(t, err)
	_, err = outbox.StaleOutboxResources(ctx, w.Pool, time.Millisecond, 10)
	require.NoError(t, err)
	_, err = inbox.StalePendingResources(ctx, w.Pool, time.Millisecond, 10)
	require.NoError(t, err)
	_, err = inbox.HeldPendingResources(ctx, w.Pool, time.Millisecond, time.Millisecond, 10)
	require.NoError(t, err)
	// The sweeper's trend sample, twice in a minute (the upsert).
	require.NoError(t, inbox.RecordTrendSample(ctx, w.Pool))
	require.NoError(t, inbox.RecordTrendSample(ctx, w.Pool))

	_, err = endpoints.FindAPIEndpoint(ctx, w.Pool, "stripe", "acct_1", "test")
	require.NoError(t, err)
	scopes, err := passes.ListScopes(ctx, w.Pool, "stripe", "")
	require.NoError(t, err)
	require.Len(t, scopes, 1)
	cp, _, err := passes.BeginPass(ctx, w, "pass", "run-1", false)
	require.NoError(t, err)
	_, _, err = passes.AdvancePass(ctx, w.Pool, "pass", passes.PageProgress{Owner: "run-1", Pages: cp.Pages, Next: "c", Seen: 1})
	require.NoError(t, err)
	_, err = passes.GetCheckpoint(ctx, w.Pool, "pass")
	require.NoError(t, err)
	_, err = passes.ListHookScopes(ctx, w.Pool, "github", "")
	require.NoError(t, err)
	_, err = passes.ReceivedDeliveries(ctx, w.Pool, "stripe", "test", "ep", []string{"evt_1"})
	require.NoError(t, err)
	_, claimed, err := passes.ClaimRecovery(ctx, w.Pool, "ep", "guid-1", 1, "run-1")
	require.NoError(t, err)
	require.True(t, claimed)
	require.NoError(t, passes.SetRecoveryAction(ctx, w.Pool, "ep", "guid-1", passes.RecoveryFetch))
	backfilled := storetest.Event("evt_backfill", `{"id":"evt_backfill"}`)
	backfilled.Origin = keys.OriginBackfill
	res, err := inbox.InsertInboxEvent(ctx, w.Pool, backfilled)
	require.NoError(t, err)
	require.Equal(t, inbox.Inserted, res.Outcome)

	_, err = inbox.RedactInboxPayloads(ctx, w.Pool, time.Hour, 10)
	require.NoError(t, err)
	_, err = inbox.DeleteExpiredInboxRows(ctx, w.Pool, keys.MinDedupRetention, 10)
	require.NoError(t, err)
	_, err = inbox.DeleteResolvedQuarantine(ctx, w.Pool, time.Hour, 10)
	require.NoError(t, err)
}

// The console (hookinbox_console) reads what the operator reads, and never
// a secret (signing secrets, API keys, destination secrets: plain, sealed,
// or the lookup fingerprint of a destination), a token's or a session's
// hash, nor a payload. Tokens and sessions it uses through the SECURITY
// DEFINER functions only.
func TestConsoleRoleCannotReadSecretsTokenHashesOrPayloads(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	require.NoError(t, outbox.UpsertDestination(ctx, b.owner.Pool, b.owner.Keys, outbox.Destination{WorkspaceID: "ws_1", Name: "team",
		Kind: "webhook", Target: "https://hooks.example/T/B/TOKEN", Secret: "whsec_team", Enabled: true}))
	tok, err := access.InsertAPIToken(ctx, b.owner.Pool, "alice", "admin", "test", bytesOf(7))
	require.NoError(t, err)
	require.NoError(t, access.StartSession(ctx, b.owner.Pool, bytesOf(9), tok.ID, time.Hour))
	con := b.as(t, store.RoleConsole)

	for _, sql := range []string{
		`SELECT secret FROM endpoint_secrets`,
		`SELECT secret_sealed FROM endpoint_secrets`,
		`SELECT * FROM endpoint_secrets`,
		`SELECT api_key FROM endpoints`,
		`SELECT api_key_sealed FROM endpoints`,
		`SELECT * FROM endpoints`,
		`SELECT secret FROM team_destinations`,
		`SELECT secret_sealed FROM team_destinations`,
		`SELECT token_sha256 FROM api_tokens`,
		`SELECT * FROM api_tokens`,
		`SELECT session_sha256 FROM console_sessions`,
		`SELECT id FROM api_tokens WHERE token_sha256 = '\x00'`,
		`SELECT payload FROM webhook_inbox`,
		`SELECT payload FROM inbox_quarantine`,
		`SELECT payload FROM outbox`,
		`SELECT id FROM webhook_inbox WHERE payload IS NULL`,
	} {
		denied(t, ctx, con, sql)
	}
	// The same reads as the operator otherwise.
	_, err = inbox.ListInboxEvents(ctx, con.Pool, inbox.InboxFilter{Limit: 10})
	require.NoError(t, err)
	_, err = inbox.InspectInboxEvent(ctx, con.Pool, b.key, true)
	requireDenied(t, err, "an event's payload on the console's own pool")
	ep, err := endpoints.GetEndpointView(ctx, con, "ep")
	require.NoError(t, err)
	require.True(t, ep.HasAPIKey)
	require.Empty(t, ep.APIKey)
	require.NotEmpty(t, ep.Secrets[0].Fingerprint)
	require.Empty(t, ep.Secrets[0].Value)
	_, err = endpoints.GetEndpoint(ctx, con, "ep")
	requireDenied(t, err, "GetEndpoint (opens the secrets) as the console")
	_, err = endpoints.Reseal(ctx, con)
	requireDenied(t, err, "a key rotation's reseal as the console")
	ds, err := outbox.ListDestinationViews(ctx, con.Pool, "ws_1")
	require.NoError(t, err)
	require.True(t, ds[0].Signed)

	// Tokens and sessions: by the hash presented, never by reading hashes.
	got, err := access.LookupAPIToken(ctx, con.Pool, bytesOf(7))
	require.NoError(t, err)
	require.Equal(t, "alice", got.Name)
	got, err = access.SessionToken(ctx, con.Pool, bytesOf(9))
	require.NoError(t, err)
	require.Equal(t, "alice", got.Name)
	require.NoError(t, access.StartSession(ctx, con.Pool, bytesOf(10), tok.ID, time.Hour))
	ended, err := access.EndSession(ctx, con.Pool, bytesOf(9))
	require.NoError(t, err)
	require.True(t, ended)
	_, err = access.SessionToken(ctx, con.Pool, bytesOf(9))
	require.ErrorIs(t, err, fault.ErrNotFound)
	// No other role may run them.
	for _, role := range []string{store.RoleIntake, store.RoleWorker, store.RoleOperator, store.RolePayloadReader} {
		_, err := access.LookupAPIToken(ctx, b.as(t, role).Pool, bytesOf(7))
		requireDenied(t, err, role+" looks up a token")
	}

	// The payload reader: payloads by id, nothing else.
	pr := b.as(t, store.RolePayloadReader)
	p, err := inbox.GetQuarantinePayload(ctx, pr.Pool, b.qid)
	require.NoError(t, err)
	require.Equal(t, []byte("not json"), p)
	_, err = outbox.GetOutboxPayload(ctx, pr.Pool, b.oid)
	require.NoError(t, err)
	for _, sql := range []string{`SELECT status FROM webhook_inbox`, `SELECT api_key_sealed FROM endpoints`,
		`SELECT * FROM operator_actions`, `UPDATE webhook_inbox SET status = 'pending'`, `DELETE FROM outbox`} {
		denied(t, ctx, pr, sql)
	}
}

// What the console writes is what its acts need, and nothing more: no
// handler's effect (grants, projections, alerts), no secret rewritten in
// place of another's, no token minted, no lineage or audit rewritten.
func TestConsoleRoleWritesNothingOutsideItsActs(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	con := b.as(t, store.RoleConsole)
	for _, sql := range []string{
		`INSERT INTO credit_grants (provider, source_account, environment, invoice_id, operation, workspace_id, credits, amount_paid, currency, event_key)
		 VALUES ('stripe', 'a', 'test', 'in_x', 'initial-credit-grant', 'ws_1', 100, 1, 'usd', 'k')`,
		`UPDATE subscription_projection SET status = 'active'`,
		`INSERT INTO feedback_alerts (provider, project, environment, feedback_id, operation, workspace_id, event_key) VALUES ('s', 'p', 't', 'f', 'o', 'ws_1', 'k')`,
		`INSERT INTO api_tokens (name, role, created_by, token_sha256) VALUES ('mallory', 'admin', 'x', '\x00')`,
		`UPDATE api_tokens SET role = 'admin'`,
		`DELETE FROM api_tokens`,
		`INSERT INTO console_sessions (session_sha256, token_id, expires_at) VALUES ('\x00', 1, now())`,
		`UPDATE operator_actions SET actor = 'someone else'`,
		`DELETE FROM operator_actions`,
		`DELETE FROM webhook_inbox`,
		`UPDATE webhook_inbox SET body_sha256 = '\x00'`,
		`UPDATE webhook_inbox SET workspace_id = 'ws_2'`,
		`DELETE FROM event_lineage`,
		`UPDATE endpoint_secrets SET secret_sealed = '\x00'`,
		`UPDATE team_destinations SET secret_sealed = '\x00'`,
		`INSERT INTO team_destinations (workspace_id, name, kind, target) VALUES ('ws_1', 'x', 'webhook', 'https://evil.example')`,
		`UPDATE outbox SET payload = '{}'::jsonb, kind = 'webhook'`,
		`DELETE FROM outbox`,
		`INSERT INTO outbox (operation_key, class, kind, destination, workspace_id, resource_key, payload) VALUES ('x', 'c', 'email', 'a@b', 'ws_1', 'r', '{}')`,
		`UPDATE reconcile_checkpoints SET cursor = 'x'`,
		`INSERT INTO business_claims (business_key, event_key, resource_key, handler) VALUES ('b', 'e', 'r', 'h')`,
		`DELETE FROM inbox_quarantine`,
		`UPDATE workspaces SET id = 'other'`,
	} {
		denied(t, ctx, con, sql)
	}
}

// bytesOf is 32 bytes of b (a hash presented by a test).
func bytesOf(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// Everything the console does, through ops, as hookinbox_console with its
// payload pool as hookinbox_payload_reader: the grants are enough for
// every act (the console's own tests run their API and pages on the same
// roles).
func TestConsoleRoleCanDoEverythingTheConsoleDoes(t *testing.T) {
	t.Parallel()
	b := roleSetup(t)
	ctx := b.ctx
	svc := &ops.Service{Store: b.as(t, store.RoleConsole), Payloads: b.as(t, store.RolePayloadReader), Routes: routestest.Builtin(),
		Config: config.Default()}
	alice := ops.Actor{Name: "alice"}

	// Reads, payloads on their pool.
	d, err := svc.ShowEvent(ctx, b.key, true)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"evt_fixture","card":"4242"}`, string(d.RawPayload))
	_, err = svc.ShowQuarantine(ctx, b.qid, true)
	require.NoError(t, err)
	o, err := svc.ShowOutbox(ctx, b.oid, true)
	require.NoError(t, err)
	require.JSONEq(t, `{"to":"a@example.com"}`, string(o.Payload))
	_, err = svc.Explain(ctx, ops.LineageEvent, b.key.String())
	require.NoError(t, err)
	_, err = svc.ListEndpoints(ctx)
	require.NoError(t, err)
	_, err = svc.ShowWorkspace(ctx, "ws_1")
	require.NoError(t, err)

	// Replay, one event and a job carried out by the console's runner.
	_, err = inbox.StopInboxEvent(ctx, b.owner.Pool, b.key, keys.StatusExhausted, "x")
	require.NoError(t, err)
	sum, err := svc.Replay(ctx, alice, ops.ReplayRequest{Keys: []keys.Event{b.key}, Reason: "provider back"})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Replayed)
	_, err = inbox.StopInboxEvent(ctx, b.owner.Pool, b.key, keys.StatusFailed, "x")
	require.NoError(t, err)
	job, err := svc.StartReplayJob(ctx, alice, ops.ReplayRequest{Keys: []keys.Event{b.key}, Reason: "job"})
	require.NoError(t, err)
	jctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svc.RunReplayJobs(jctx, 20*time.Millisecond); close(done) }()
	require.Eventually(t, func() bool {
		j, err := svc.ReplayJob(ctx, job.ID)
		return err == nil && j.Finished()
	}, 10*time.Second, 20*time.Millisecond)
	stop()
	<-done
	j, err := svc.ReplayJob(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, ops.JobDone, j.Status, j.LastError)
	require.Equal(t, 1, j.Replayed)

	// Quarantine: re-admit (the body read on the payload pool), discard.
	body := []byte(`{"id":"evt_q","object":"event","type":"invoice.paid","livemode":false,"created":1700000000,"account":"acct_2",
		"data":{"object":{"id":"in_q","object":"invoice"}}}`)
	h := sha256.Sum256(body)
	_, err = inbox.InsertQuarantine(ctx, b.owner.Pool, &inbox.QuarantineEntry{EndpointSlug: "ep", Provider: "stripe", Account: "acct_2",
		Environment: "test", EventID: "evt_q", Reason: inbox.ReasonUnknownAccount, Payload: body, BodySHA256: h[:]})
	require.NoError(t, err)
	qs, err := inbox.ListQuarantine(ctx, b.owner.Pool, inbox.QuarantineFilter{Limit: 10, Reason: inbox.ReasonUnknownAccount})
	require.NoError(t, err)
	require.Len(t, qs, 1)
	_, err = svc.LinkAccount(ctx, alice, "ep", "acct_2", "ws_2", "onboarded")
	require.NoError(t, err)
	res, err := svc.ResolveQuarantine(ctx, alice, []int64{qs[0].ID}, ops.ResolveReadmit, "linked")
	require.NoError(t, err)
	require.Empty(t, res[0].Error)
	require.Equal(t, "inserted", res[0].Outcome)
	_, err = svc.ResolveQuarantine(ctx, alice, []int64{b.qid}, ops.ResolveDiscard, "garbage")
	require.NoError(t, err)

	// Outbox release.
	_, err = outbox.StopOutbox(ctx, b.owner.Pool, b.oid, keys.OutboxHeld, "uncertain")
	require.NoError(t, err)
	_, err = svc.ReleaseOutbox(ctx, alice, b.oid, "checked at the destination")
	require.NoError(t, err)

	// Endpoints (admin).
	require.NoError(t, svc.AddEndpoint(ctx, alice, endpoints.NewEndpoint{Slug: "gh", Provider: "github", Environment: "live",
		Secrets: []string{"ghsecret-ONE-k2oBvwfyqY1Ad5ATpJwQLSYz1f5QS"}, APIKey: "ghp_ONE0123456789abcdefghij"}, "onboarding"))
	key, base := "ghp_TWO0123456789abcdefghij", "https://api.github.com"
	_, err = svc.UpdateEndpoint(ctx, alice, "gh", ops.EndpointChange{APIKey: &key, APIBaseURL: &base}, "rotated")
	require.NoError(t, err)
	added, err := svc.AddSecret(ctx, alice, "gh", ops.NewSecret{Secret: "ghsecret-TWO-k2oBvwfyqY1Ad5ATpJwQLSYz1f5QS", RetireOthers: true}, "rotation")
	require.NoError(t, err)
	require.Len(t, added.Retired, 1)
	require.NoError(t, svc.BindSecret(ctx, alice, "gh", added.ID, []string{"octo"}, "one owner"))
	_, err = svc.AddSecret(ctx, alice, "gh", ops.NewSecret{Secret: "ghsecret-THREE-k2oBvwfyqY1Ad5ATpJwQLSYz1f5"}, "rotation")
	require.NoError(t, err)
	require.NoError(t, svc.RemoveSecret(ctx, alice, "gh", added.ID, "retired"))
	_, err = svc.LinkAccount(ctx, alice, "gh", "octo", "ws_3", "")
	require.NoError(t, err)
	_, err = svc.SetOwnAccount(ctx, alice, "gh", "octo", "")
	require.NoError(t, err)
	require.NoError(t, svc.UnlinkAccount(ctx, alice, "gh", "octo", ""))
	require.NoError(t, svc.RemoveEndpoint(ctx, alice, "gh", "gone"))

	// Workspaces (admin).
	require.NoError(t, svc.SetWorkspaceEmail(ctx, alice, "ws_1", "billing@example.com", ""))
	_, err = svc.AdjustWorkspace(ctx, alice, "ws_1", ops.WorkspaceAdjustment{Credits: 5, OperationID: "op-1", Reason: "goodwill"})
	require.NoError(t, err)
	er, err := svc.EraseWorkspace(ctx, alice, "ws_1", "customer asked")
	require.NoError(t, err)
	require.Positive(t, er.Counts.InboxPayloads+er.Counts.OutboxPayloads)

	// The audit, read back.
	acts, err := svc.RecentActions(ctx, "alice", "", 100)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(acts), 15)
}

// A migration set may be granted a column of a core table only where the
// core leaves it to a domain (workspaces.credits_balance), never another.
func TestExtraGrantsOnACoreTableOnlyForDomainColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	_, _, err := store.ReapplyGrants(ctx, s.Pool, store.Grant{Role: store.RoleWorker, Privilege: "UPDATE", Table: "workspaces",
		Columns: []string{"credits_balance"}})
	require.NoError(t, err)
	for _, g := range []store.Grant{
		{Role: store.RoleWorker, Privilege: "UPDATE", Table: "workspaces", Columns: []string{"email"}},
		{Role: store.RoleWorker, Privilege: "UPDATE", Table: "workspaces"},
		{Role: store.RoleWorker, Privilege: "UPDATE", Table: "account_links", Columns: []string{"workspace_id"}},
	} {
		_, _, err := store.ReapplyGrants(ctx, s.Pool, g)
		require.ErrorContains(t, err, "hookinbox's own table", "%+v", g)
	}
}
