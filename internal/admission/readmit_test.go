package admission_test

import (
	"crypto/sha256"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers/providertest"
)

// quarantineID is the id of the quarantine entry holding eventID.
func (b *bundle) quarantineID(t *testing.T, eventID string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT id FROM inbox_quarantine WHERE event_id = $1`, eventID).Scan(&id))
	return id
}

func (b *bundle) entry(t *testing.T, id int64) *inbox.QuarantineItem {
	t.Helper()
	q, err := inbox.GetQuarantineEntry(b.ctx, b.store.Pool, id, false)
	require.NoError(t, err)
	return q
}

func TestReadmitUnknownAccountAfterLinking(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A Connect event from an account nobody linked yet arrives through the
	// intake's admission and is quarantined.
	body := []byte(`{"id":"evt_q1","object":"event","type":"invoice.paid","livemode":true,"account":"acct_new","created":1760000000,"data":{"object":{"id":"in_9","object":"invoice"}}}`)
	r, err := b.admit(t, "stripe-connect", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, r.Outcome, r.Reason)
	id := b.quarantineID(t, "evt_q1")
	key := keys.Event{Provider: "stripe", Account: "acct_new", Environment: "live", EventID: "evt_q1"}

	// Still unlinked: refused with the fix, entry open, nothing inserted.
	_, err = admission.Readmit(b.ctx, b.store, routestest.Builtin(), id, "alice", "customer onboarded")
	require.ErrorIs(t, err, admission.ErrCannotReadmit)
	require.Contains(t, err.Error(), "acct_new is still not linked")
	require.Contains(t, err.Error(), "endpoints link --slug stripe-connect --account acct_new")
	require.Nil(t, b.entry(t, id).ResolvedAt)
	require.Zero(t, b.inboxCount(t))
	acts, err := store.ListOperatorActions(b.ctx, b.store.Pool, inbox.QuarantineTarget(id), 10)
	require.NoError(t, err)
	require.Empty(t, acts)

	// The operator links the account, then re-admits.
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "stripe-connect", "acct_new", "ws_new"))
	res, err := admission.Readmit(b.ctx, b.store, routestest.Builtin(), id, "alice", "customer onboarded")
	require.NoError(t, err)
	require.Equal(t, inbox.Inserted, res.Outcome)
	require.Equal(t, key, res.Key)
	require.Equal(t, keys.StatusPending, res.Status)
	require.Equal(t, "ws_new", res.Workspace)
	require.Equal(t, keys.Resource{Provider: "stripe", Account: "acct_new", Environment: "live", Kind: "invoice", ID: "in_9"}, res.Resource)

	got := b.row(t, key)
	require.Equal(t, keys.StatusPending, got.Status)
	require.Equal(t, "ws_new", got.WorkspaceID)
	require.Equal(t, "invoice", got.ResourceKind)
	require.Equal(t, "in_9", got.ResourceID)
	require.Equal(t, "invoice.paid", got.EventType)
	require.Equal(t, keys.OriginQuarantine, got.Origin)
	require.Equal(t, body, got.Payload, "the exact bytes received are kept")
	sum := sha256.Sum256(body)
	require.Equal(t, sum[:], got.BodySHA256)
	require.Equal(t, res.InboxID, got.ID)
	require.NotNil(t, got.OccurredAt)

	q := b.entry(t, id)
	require.NotNil(t, q.ResolvedAt)
	require.Equal(t, "alice", q.ResolvedBy)
	require.Equal(t, "readmitted as stripe/acct_new/live/evt_q1: customer onboarded", q.Resolution)
	acts, err = store.ListOperatorActions(b.ctx, b.store.Pool, key.String(), 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, inbox.ActionQuarantineReadmit, acts[0].Action)
	require.Equal(t, inbox.QuarantineTarget(id), acts[0].Target)
	require.Equal(t, "customer onboarded", acts[0].Reason)
	require.Equal(t, inbox.ReasonUnknownAccount, acts[0].Details["quarantine_reason"])
	require.Equal(t, "inserted", acts[0].Details["outcome"])

	// Resolved once: a second re-admission is refused and adds nothing.
	_, err = admission.Readmit(b.ctx, b.store, routestest.Builtin(), id, "bob", "again")
	var resolved *inbox.AlreadyResolvedError
	require.ErrorAs(t, err, &resolved)
	require.Equal(t, 1, b.inboxCount(t))
}

func TestReadmitWhenTheSenderAlreadyRedelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"id":"evt_q2","object":"event","type":"invoice.paid","livemode":true,"account":"acct_late","created":1760000000,"data":{"object":{"id":"in_7","object":"invoice"}}}`)
	r, err := b.admit(t, "stripe-connect", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, r.Outcome, r.Reason)
	id := b.quarantineID(t, "evt_q2")

	// Linked, and the sender's retry is accepted before the operator acts.
	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "stripe-connect", "acct_late", "ws_late"))
	time.Sleep(1100 * time.Millisecond) // the intake's reload-on-unknown-account floor
	r, err = b.admit(t, "stripe-connect", body, providertest.StripeHeaders(body, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, r.Outcome)
	key := keys.Event{Provider: "stripe", Account: "acct_late", Environment: "live", EventID: "evt_q2"}
	_, err = inbox.CompleteInboxEvent(b.ctx, b.store.Pool, key, keys.StatusDone, "granted")
	require.NoError(t, err)

	// The event key settles it: the entry closes, the row is left alone.
	res, err := admission.Readmit(b.ctx, b.store, routestest.Builtin(), id, "alice", "linked")
	require.NoError(t, err)
	require.Equal(t, inbox.Duplicate, res.Outcome)
	require.Equal(t, keys.StatusDone, res.Status, "no doorbell needed for a done row")
	require.Equal(t, 1, b.inboxCount(t))
	got := b.row(t, key)
	require.Equal(t, keys.StatusDone, got.Status)
	require.Equal(t, keys.OriginWebhook, got.Origin)
	require.NotNil(t, b.entry(t, id).ResolvedAt)
}

func TestReadmitGitHubFormDeliveryUsesTheKeptHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := `{"action":"opened","installation":{"id":999},"repository":{"full_name":"octo/hello","owner":{"login":"octo"}}}`
	form := []byte("payload=" + url.QueryEscape(doc))
	h := providertest.GitHubHeaders(form, githubSecret, "d-q1", "issues")
	h["Content-Type"] = "application/x-www-form-urlencoded"
	r, err := b.admit(t, "gh", form, h)
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, r.Outcome, r.Reason)
	id := b.quarantineID(t, "d-q1")

	require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "gh", "999", "ws_gh2"))
	res, err := admission.Readmit(b.ctx, b.store, routestest.Builtin(), id, "alice", "installation approved")
	require.NoError(t, err)
	key := keys.Event{Provider: "github", Account: "999", Environment: "live", EventID: "d-q1"}
	require.Equal(t, key, res.Key)
	got := b.row(t, key)
	require.Equal(t, "issues.opened", got.EventType, "type from the kept X-GitHub-Event header")
	require.Equal(t, "repository", got.ResourceKind)
	require.Equal(t, "octo/hello", got.ResourceID, "JSON from the form's payload field")
	require.Equal(t, "ws_gh2", got.WorkspaceID)
	require.Equal(t, keys.StatusIgnored, got.Status, "no handler takes GitHub issues")
	require.Equal(t, keys.StatusIgnored, res.Status)
	require.Equal(t, form, got.Payload)
}

func TestReadmitRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Same key, different body: the original stays, the newcomer is quarantined.
	orig := providertest.StripeEvent("evt_c", "invoice.paid", "in_1", "invoice", "")
	r, err := b.admit(t, "stripe", orig, providertest.StripeHeaders(orig, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Accepted, r.Outcome)
	other := providertest.StripeEvent("evt_c", "invoice.paid", "in_OTHER", "invoice", "")
	r, err = b.admit(t, "stripe", other, providertest.StripeHeaders(other, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, inbox.ReasonConflictingDuplicate, r.Reason)
	conflict := b.quarantineID(t, "evt_c")

	// A test-mode event on the live endpoint.
	env := []byte(`{"id":"evt_env","object":"event","type":"invoice.paid","livemode":false,"account":"acct_c1","created":1,"data":{"object":{"id":"in_9","object":"invoice"}}}`)
	r, err = b.admit(t, "stripe-connect", env, providertest.StripeHeaders(env, stripeSecret, time.Now()))
	require.NoError(t, err)
	require.Equal(t, admission.Quarantined, r.Outcome, r.Reason)
	mismatch := b.quarantineID(t, "evt_env")

	// A handled type without the identifiers it needs (inserted as the
	// intake stores it: the body is a real Stripe event).
	bad := []byte(`{"id":"evt_noobj","object":"event","type":"invoice.paid","livemode":false,"created":1,"data":{}}`)
	sum := sha256.Sum256(bad)
	_, err = inbox.InsertQuarantine(b.ctx, b.store.Pool, &inbox.QuarantineEntry{EndpointSlug: "stripe", Provider: "stripe",
		EventID: "evt_noobj", Reason: inbox.ReasonMalformed, Detail: "missing the resource id", Payload: bad, BodySHA256: sum[:],
		Headers: map[string]string{"Content-Type": "application/json"}})
	require.NoError(t, err)
	malformed := b.quarantineID(t, "evt_noobj")

	tests := []struct {
		name string
		id   int64
		want []string
	}{
		{"conflicting duplicate", conflict, []string{"stripe/acct_own/test/evt_c is already in the inbox with a different body", "discard", "replay stripe/acct_own/test/evt_c"}},
		{"environment mismatch", mismatch, []string{"still an environment mismatch", "a test event on a live endpoint"}},
		{"still malformed", malformed, []string{"still malformed", "missing the resource id of a invoice.paid event"}},
	}
	for _, tt := range tests {
		_, err := admission.Readmit(b.ctx, b.store, routestest.Builtin(), tt.id, "alice", "try")
		require.ErrorIs(t, err, admission.ErrCannotReadmit, tt.name)
		for _, w := range tt.want {
			require.Contains(t, err.Error(), w, tt.name)
		}
		require.Nil(t, b.entry(t, tt.id).ResolvedAt, "%s: the entry stays open", tt.name)
	}
	require.Equal(t, 1, b.inboxCount(t))
	got := b.row(t, keys.Event{Provider: "stripe", Account: "acct_own", Environment: "test", EventID: "evt_c"})
	require.Equal(t, orig, got.Payload, "the original is untouched")

	// Who and why are required; an unknown id is not found.
	_, err = admission.Readmit(b.ctx, b.store, routestest.Builtin(), malformed, "alice", " ")
	require.Error(t, err)
	_, err = admission.Readmit(b.ctx, b.store, routestest.Builtin(), 999999, "alice", "x")
	require.ErrorIs(t, err, fault.ErrNotFound)

	// A conflicting duplicate is resolved by discarding it; the audit shows
	// on the original event too.
	_, err = inbox.DiscardQuarantine(b.ctx, b.store, conflict, "alice", "sender bug, original is right")
	require.NoError(t, err)
	require.NotNil(t, b.entry(t, conflict).ResolvedAt)
	acts, err := store.ListOperatorActions(b.ctx, b.store.Pool, got.Key.String(), 10)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, inbox.ActionQuarantineDiscard, acts[0].Action)
}
