package ops_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/access"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type bell struct {
	mu  sync.Mutex
	got []keys.Resource
}

func (b *bell) Ring(_ context.Context, r keys.Resource, _, _ string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, r)
	return nil
}

type bundle struct {
	ctx  context.Context
	st   *store.Store
	svc  *ops.Service
	bell *bell
}

var alice = ops.Actor{Name: "alice"}

func setup(t *testing.T) *bundle {
	t.Helper()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "stripe", Provider: "stripe", Environment: "test",
		Account: "acct_1", APIKey: "sk_test_SECRETKEY", Secrets: []string{"whsec_SECRETONE"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "stripe", "acct_1", "ws_1"))
	cfg := config.Default()
	b := &bell{}
	return &bundle{ctx: ctx, st: st, bell: b, svc: &ops.Service{Store: st, Routes: routestest.Builtin(), Handled: routestest.Builtin(), Doorbell: b,
		Config: cfg, SignalTimeout: time.Second}}
}

// add inserts an event of invoice inv and leaves it in status.
func (b *bundle) add(t *testing.T, id, inv, status string) keys.Event {
	t.Helper()
	body := []byte(`{"id":"` + id + `","type":"invoice.paid","data":{"object":{"id":"` + inv + `","object":"invoice"}}}`)
	sum := sha256.Sum256(body)
	ev := &inbox.InboxEvent{Key: keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id},
		EndpointSlug: "stripe", WorkspaceID: "ws_1", EventType: "invoice.paid", ResourceKind: "invoice", ResourceID: inv,
		Payload: body, BodySHA256: sum[:]}
	_, err := inbox.InsertInboxEvent(b.ctx, b.st.Pool, ev)
	require.NoError(t, err)
	switch status {
	case keys.StatusPending:
	case keys.StatusDone:
		_, err = inbox.CompleteInboxEvent(b.ctx, b.st.Pool, ev.Key, status, "")
		require.NoError(t, err)
	default:
		_, err = inbox.StopInboxEvent(b.ctx, b.st.Pool, ev.Key, status, "stripe API 503")
		require.NoError(t, err)
	}
	return ev.Key
}

func (b *bundle) status(t *testing.T, k keys.Event) string {
	t.Helper()
	e, err := inbox.GetInboxEvent(b.ctx, b.st.Pool, k)
	require.NoError(t, err)
	return e.Status
}

func TestInboxListingPagesWithACursorAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_5"} {
		b.add(t, id, "in_"+id, keys.StatusExhausted)
	}
	b.add(t, "evt_done", "in_x", keys.StatusDone)
	f := inbox.InboxFilter{Statuses: []string{keys.StatusExhausted}, Workspace: "ws_1", EventType: "invoice.paid", Limit: 2}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 4)
		p, err := b.svc.ListInbox(b.ctx, f, cursor)
		require.NoError(t, err)
		for _, e := range p.Events {
			seen = append(seen, e.EventID)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	require.Equal(t, []string{"evt_5", "evt_4", "evt_3", "evt_2", "evt_1"}, seen, "newest first, each once, the done one filtered out")

	f.Workspace = "ws_other"
	p, err := b.svc.ListInbox(b.ctx, f, "")
	require.NoError(t, err)
	require.Empty(t, p.Events)
	require.NotNil(t, p.Events, "an empty page is [] in JSON")

	for _, bad := range []inbox.InboxFilter{{Statuses: []string{"lost"}, Limit: 1}, {Provider: "paypal", Limit: 1}, {Limit: 0},
		{Limit: 5000}, {From: time.Now(), To: time.Now().Add(-time.Hour), Limit: 1}} {
		_, err := b.svc.ListInbox(b.ctx, bad, "")
		require.True(t, ops.IsInvalid(err), "%+v: %v", bad, err)
	}
	_, err = b.svc.ListInbox(b.ctx, inbox.InboxFilter{Limit: 1}, "not-a-cursor")
	require.True(t, ops.IsInvalid(err))
}

func TestAReplayJobReplaysItsSelectionOnceWithProgressAndStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ks []keys.Event
	for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
		ks = append(ks, b.add(t, id, "in_shared", keys.StatusExhausted))
	}
	other := b.add(t, "evt_other", "in_other", keys.StatusFailed)
	later := func() keys.Event { return b.add(t, "evt_later", "in_later", keys.StatusExhausted) }

	f := inbox.InboxFilter{Statuses: []string{keys.StatusExhausted}, Limit: 100}
	j, err := b.svc.StartReplayJob(b.ctx, alice, ops.ReplayRequest{Filter: &f, Reason: "INC-7"})
	require.NoError(t, err)
	require.Equal(t, access.JobQueued, j.Status)
	require.Equal(t, 3, j.Total)
	lateKey := later() // arrives after the job was created: not part of it

	var progress []int
	done, err := b.svc.RunReplayJob(b.ctx, j.ID, func(j *access.ReplayJob, _ ops.ReplayRow) { progress = append(progress, j.Processed) })
	require.NoError(t, err)
	require.Equal(t, access.JobDone, done.Status)
	require.Equal(t, []int{1, 2, 3}, progress)
	require.Equal(t, 3, done.Replayed)
	for _, k := range ks {
		require.Equal(t, keys.StatusPending, b.status(t, k))
		acts, err := store.ListOperatorActions(b.ctx, b.st.Pool, k.String(), 10)
		require.NoError(t, err)
		require.Len(t, acts, 1)
		require.Equal(t, "alice", acts[0].Actor)
		require.Contains(t, acts[0].Details["selection"], "replay job")
	}
	require.Equal(t, keys.StatusFailed, b.status(t, other), "only the selected status")
	require.Equal(t, keys.StatusExhausted, b.status(t, lateKey), "the selection is what existed when the job was created")
	require.Len(t, b.bell.got, 1, "one doorbell for the one resource")

	// Running it again is refused: it is done.
	_, err = b.svc.RunReplayJob(b.ctx, j.ID, nil)
	require.Error(t, err)

	// A queued job cancelled before it runs replays nothing.
	j2, err := b.svc.StartReplayJob(b.ctx, alice, ops.ReplayRequest{Keys: []keys.Event{lateKey}, Reason: "INC-8"})
	require.NoError(t, err)
	c, err := b.svc.CancelReplayJob(b.ctx, alice, j2.ID)
	require.NoError(t, err)
	require.Equal(t, access.JobCancelled, c.Status)
	_, err = b.svc.RunReplayJob(b.ctx, j2.ID, nil)
	require.Error(t, err)
	require.Equal(t, keys.StatusExhausted, b.status(t, lateKey))
	acts, err := store.RecentOperatorActions(b.ctx, b.st.Pool, "alice", "replay_job_cancel", 10)
	require.NoError(t, err)
	require.Len(t, acts, 1, "cancelling is audited")

	// Bad requests are refused before anything is stored.
	for _, req := range []ops.ReplayRequest{
		{Filter: &inbox.InboxFilter{Statuses: []string{keys.StatusExhausted}}, Reason: " "},
		{Filter: &inbox.InboxFilter{}, Reason: "x"},
		{Filter: &inbox.InboxFilter{Statuses: []string{keys.StatusDone}}, Reason: "x"},
		{Keys: []keys.Event{lateKey}, Filter: &inbox.InboxFilter{Provider: "stripe"}, Reason: "x"},
		{Reason: "x"},
	} {
		_, err := b.svc.StartReplayJob(b.ctx, alice, req)
		require.True(t, ops.IsInvalid(err), "%+v: %v", req, err)
	}
	js, err := b.svc.ReplayJobs(b.ctx, 10)
	require.NoError(t, err)
	require.Len(t, js, 2)
}

// The lineage of a grant names every delivery behind it, the duplicate
// and the quarantined conflict included, and keeps naming them after
// retention redacted the payloads and deleted the rows.
func TestLineageOfAGrantSurvivesRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.add(t, "evt_first", "in_9", keys.StatusDone)
	dup := b.add(t, "evt_dup", "in_9", keys.StatusDone)
	require.NoError(t, b.st.Tx(b.ctx, func(tx pgx.Tx) error {
		_, _, err := ledger.GrantCreditsOnce(b.ctx, tx, ledger.CreditGrant{Provider: "stripe", Account: "acct_1", Environment: "test",
			InvoiceID: "in_9", Operation: "initial-credit-grant", WorkspaceID: "ws_1", Credits: 100, AmountPaid: 1000, Currency: "usd",
			EventKey: first.String()})
		return err
	}))
	body := []byte(`{"id":"evt_first","other":"body"}`)
	sum := sha256.Sum256(body)
	_, err := inbox.InsertQuarantine(b.ctx, b.st.Pool, &inbox.QuarantineEntry{EndpointSlug: "stripe", Provider: "stripe",
		Account: "acct_1", Environment: "test", EventID: "evt_first", Reason: inbox.ReasonConflictingDuplicate,
		Detail: "same key, other body", Payload: body, BodySHA256: sum[:], Headers: map[string]string{}})
	require.NoError(t, err)
	_, err = b.svc.Replay(b.ctx, alice, ops.ReplayRequest{Keys: []keys.Event{dup}, Reason: "check", Force: true})
	require.NoError(t, err)
	_, err = inbox.CompleteInboxEvent(b.ctx, b.st.Pool, dup, keys.StatusDone, "")
	require.NoError(t, err)

	check := func(deleted bool) *ops.Lineage {
		t.Helper()
		for _, ref := range []string{"in_9", "stripe/acct_1/test/in_9", "credit-grant/stripe/acct_1/test/in_9/initial-credit-grant"} {
			l, err := b.svc.Explain(b.ctx, ops.LineageGrant, ref)
			require.NoError(t, err, ref)
			require.Equal(t, "credit-grant/stripe/acct_1/test/in_9/initial-credit-grant", l.BusinessKey)
			require.Equal(t, "resource/stripe/acct_1/test/invoice/in_9", l.Workflow.ID)
			require.Len(t, l.Grants, 1)
			require.Len(t, l.Events, 3, "two events and the quarantined conflict")
			roles := map[string]string{}
			for _, e := range l.Events {
				require.Equal(t, deleted, e.Deleted, "%s deleted", e.KeyString)
				roles[e.Source+":"+e.Key.EventID] = e.Role
			}
			require.Contains(t, roles["inbox:evt_first"], "created credit grant")
			require.Contains(t, roles["inbox:evt_dup"], "no new effect")
			require.Contains(t, roles["quarantine:evt_first"], "conflict")
			require.NotEmpty(t, l.Actions, "the forced replay of the duplicate")
			if ref == "in_9" {
				return l
			}
		}
		return nil
	}
	check(false)

	// Thirty-one days later retention redacts, then deletes, the rows.
	_, err = b.st.Pool.Exec(b.ctx, `UPDATE webhook_inbox SET received_at = now() - interval '31 days', processed_at = now() - interval '31 days'`)
	require.NoError(t, err)
	_, err = b.st.Pool.Exec(b.ctx, `UPDATE inbox_quarantine SET resolved_at = now() - interval '31 days', resolved_by = 'x', resolution = 'discarded: dup'`)
	require.NoError(t, err)
	n, err := inbox.RedactInboxPayloads(b.ctx, b.st.Pool, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	n, err = inbox.DeleteExpiredInboxRows(b.ctx, b.st.Pool, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	n, err = inbox.DeleteResolvedQuarantine(b.ctx, b.st.Pool, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	l := check(true)
	raw, err := json.Marshal(l)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "other", "no payload is kept")
	d, err := b.svc.ShowEvent(b.ctx, first, true)
	require.NoError(t, err, "the event key of the grant still names something")
	require.True(t, d.Deleted)
	require.Equal(t, "in_9", d.ResourceID)
	require.Nil(t, d.Payload)
}

func TestTokensAreStoredHashedAuthenticateAndRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nt, err := b.svc.CreateToken(b.ctx, alice, "bob", "operator")
	require.NoError(t, err)
	require.True(t, len(nt.Token) > 40)
	var stored int
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT count(*) FROM api_tokens WHERE token_sha256 = $1`, ops.HashToken(nt.Token)).Scan(&stored))
	require.Equal(t, 1, stored)
	var plain int
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT count(*) FROM api_tokens WHERE position($1 in encode(token_sha256, 'escape')) > 0`, nt.Token).Scan(&plain))
	require.Zero(t, plain)

	tok, err := b.svc.Authenticate(b.ctx, nt.Token)
	require.NoError(t, err)
	require.Equal(t, "bob", tok.Name)
	require.Equal(t, "operator", tok.Role)
	_, err = b.svc.Authenticate(b.ctx, nt.Token+"x")
	require.ErrorIs(t, err, ops.ErrBadToken)

	_, err = b.svc.CreateToken(b.ctx, alice, "bob", "viewer")
	require.True(t, ops.IsConflict(err), "names are unique")
	for _, bad := range [][2]string{{"", "viewer"}, {"a b", "viewer"}, {"carol", "root"}} {
		_, err := b.svc.CreateToken(b.ctx, alice, bad[0], bad[1])
		require.True(t, ops.IsInvalid(err), bad)
	}

	_, err = b.svc.RevokeToken(b.ctx, alice, "bob")
	require.NoError(t, err)
	_, err = b.svc.Authenticate(b.ctx, nt.Token)
	require.ErrorIs(t, err, ops.ErrBadToken, "a revoked token stops working at once")

	require.True(t, ops.RoleAtLeast("admin", "operator"))
	require.True(t, ops.RoleAtLeast("operator", "viewer"))
	require.False(t, ops.RoleAtLeast("viewer", "operator"))
	require.False(t, ops.RoleAtLeast("root", "viewer"))
}

// Endpoint changes are audited, and neither views nor the audit ever hold
// a secret or an API key.
func TestEndpointChangesAreAuditedWithoutSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, url := "sk_test_NEWSECRETKEY", "https://api.example.com"
	v, err := b.svc.UpdateEndpoint(b.ctx, alice, "stripe", ops.EndpointChange{APIKey: &key, APIBaseURL: &url, AllowCustomAPIHost: true}, "key rotated")
	require.NoError(t, err)
	require.Equal(t, url, v.APIBaseURL)
	require.Equal(t, ops.APIKeyFingerprint(b.svc.Store.Keys, key), v.APIKeyFingerprint)
	res, err := b.svc.AddSecret(b.ctx, alice, "stripe", ops.NewSecret{Secret: "whsec_SECRETTWOk2oBvwfyqY1Ad5ATpJwQLSYz", RetireOthers: true}, "rotation")
	require.NoError(t, err)
	require.Len(t, res.Retired, 1)

	bad := "ftp://x"
	_, err = b.svc.UpdateEndpoint(b.ctx, alice, "stripe", ops.EndpointChange{APIBaseURL: &bad}, "")
	require.True(t, ops.IsInvalid(err))
	_, err = b.svc.UpdateEndpoint(b.ctx, alice, "stripe", ops.EndpointChange{}, "")
	require.True(t, ops.IsInvalid(err))
	_, err = b.svc.UpdateEndpoint(b.ctx, alice, "nope", ops.EndpointChange{APIKey: &key}, "")
	require.True(t, ops.IsNotFound(err))

	eps, err := b.svc.ListEndpoints(b.ctx)
	require.NoError(t, err)
	acts, err := b.svc.RecentActions(b.ctx, "alice", "", 50)
	require.NoError(t, err)
	require.Len(t, acts, 2)
	for _, v := range []any{eps, acts} {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		for _, secret := range []string{"SECRETKEY", "SECRETONE", "SECRETTWO"} {
			require.NotContains(t, string(raw), secret)
		}
	}
	require.Equal(t, "endpoint_secret_add", acts[0].Action)
	require.Equal(t, "endpoint_update", acts[1].Action)
	require.Equal(t, "key rotated", acts[1].Reason)
}

// What the secrets issue (#14) asks of every operator act, so the console
// API gets it as the CLI does: weak secrets are refused with nothing stored,
// secrets are sealed with the store's keyring (never plain in the database),
// bound to accounts on add and by BindSecret (audited), and an endpoint's
// secret accounts must include its own account.
func TestSecretsAreCheckedSealedAndBoundByOps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	strong := "whsec_BOUNDk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS"
	for _, weak := range []string{"whsec_", "whsec_short", "whsec_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		_, err := b.svc.AddSecret(b.ctx, alice, "stripe", ops.NewSecret{Secret: weak}, "weak")
		require.True(t, ops.IsInvalid(err), "%s: %v", weak, err)
	}
	err := b.svc.AddEndpoint(b.ctx, alice, endpoints.NewEndpoint{Slug: "weak", Provider: "github", Environment: "live",
		Secrets: []string{"gh-secret"}}, "")
	require.True(t, ops.IsInvalid(err), "%v", err)
	err = b.svc.AddEndpoint(b.ctx, alice, endpoints.NewEndpoint{Slug: "own", Provider: "stripe", Environment: "live",
		Account: "acct_own", Secrets: []string{strong}, SecretAccounts: []string{"acct_other"}}, "")
	require.True(t, ops.IsInvalid(err), "secret accounts must include the own account: %v", err)
	_, err = b.svc.UpsertDestination(b.ctx, alice, ops.NewDestination{Workspace: "ws_1", Name: "hook",
		Webhook: "https://example.com/h", Secret: "whsec_"}, "")
	require.True(t, ops.IsInvalid(err), "%v", err)

	res, err := b.svc.AddSecret(b.ctx, alice, "stripe", ops.NewSecret{Secret: strong, Accounts: []string{"acct_1"}}, "bound")
	require.NoError(t, err)
	v, err := b.svc.ShowEndpoint(b.ctx, "stripe")
	require.NoError(t, err)
	require.Len(t, v.Secrets, 2)
	require.Equal(t, []string{"acct_1"}, v.Secrets[1].Accounts)
	require.NoError(t, b.svc.BindSecret(b.ctx, alice, "stripe", res.ID, nil, "any account"))
	v, err = b.svc.ShowEndpoint(b.ctx, "stripe")
	require.NoError(t, err)
	require.Empty(t, v.Secrets[1].Accounts)
	require.True(t, ops.IsNotFound(b.svc.BindSecret(b.ctx, alice, "stripe", 999999, []string{"acct_1"}, "")))
	acts, err := b.svc.RecentActions(b.ctx, "alice", "endpoint_secret_bind", 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)

	key := "sk_live_SEALEDk2oBvwfyqY1Ad5ATpJwQ"
	_, err = b.svc.UpdateEndpoint(b.ctx, alice, "stripe", ops.EndpointChange{APIKey: &key}, "rotated")
	require.NoError(t, err)
	_, err = b.svc.UpsertDestination(b.ctx, alice, ops.NewDestination{Workspace: "ws_1", Name: "hook",
		Webhook: "https://example.com/h", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "")
	require.NoError(t, err)
	var plain int
	require.NoError(t, b.st.Pool.QueryRow(b.ctx, `SELECT
		(SELECT count(*) FROM endpoint_secrets WHERE secret IS NOT NULL OR secret_sealed IS NULL) +
		(SELECT count(*) FROM endpoints WHERE api_key IS NOT NULL) +
		(SELECT count(*) FROM team_destinations WHERE secret IS NOT NULL OR secret_sealed IS NULL)`).Scan(&plain))
	require.Zero(t, plain, "every secret written through ops is sealed")
	ep, err := endpoints.GetEndpoint(b.ctx, b.st, "stripe")
	require.NoError(t, err)
	require.Equal(t, key, ep.APIKey)

	// Without the keyring, nothing is written in the clear: the act fails.
	keyless := &ops.Service{Store: &store.Store{Pool: b.st.Pool}, Config: b.svc.Config}
	_, err = keyless.AddSecret(b.ctx, alice, "stripe", ops.NewSecret{Secret: strong + "x"}, "")
	require.Error(t, err)
}

// A team's effects have lineage too: the business keys its handlers
// claimed on a resource (tx.Claim) and the event that made each.
func TestExplainShowsTheClaimsOfAResource(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := b.add(t, "evt_claim", "in_claim", keys.StatusDone)
	r := keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_claim"}
	_, err := b.st.Pool.Exec(b.ctx, `INSERT INTO business_claims (business_key, event_key, resource_key, handler) VALUES ($1, $2, $3, 'provisioning')`,
		"provision/in_claim", k.String(), r.String())
	require.NoError(t, err)
	l, err := b.svc.Explain(b.ctx, ops.LineageResource, r.String())
	require.NoError(t, err)
	require.Len(t, l.Claims, 1)
	require.Equal(t, "provision/in_claim", l.Claims[0].BusinessKey)
	require.Equal(t, k.String(), l.Claims[0].EventKey)
	require.Equal(t, "provisioning", l.Claims[0].Handler)
	var role string
	for _, e := range l.Events {
		if e.KeyString == k.String() {
			role = e.Role
		}
	}
	require.Contains(t, role, "claimed provision/in_claim", "the event's role names what it claimed")
}
