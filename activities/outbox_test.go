package activities_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

type outboxBundle struct {
	ctx   context.Context
	store *store.Store
	acts  *activities.ResourceActivities
	env   *testsuite.TestActivityEnvironment
}

func newOutbox(t *testing.T, mailer outbound.Sender, policies map[string]string) *outboxBundle {
	t.Helper()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, records.SetWorkspaceEmail(ctx, st.Pool, "ws", "billing@ws.example"))
	a := &activities.ResourceActivities{Outbox: &storeports.Outbox{Store: st, Mailer: mailer}, Policies: policies,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	return &outboxBundle{ctx: ctx, store: st, acts: a, env: env}
}

// confirmation records a credits confirmation intent, as the credits handler does.
func (b *outboxBundle) confirmation(t *testing.T, key string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.store.Tx(b.ctx, func(tx pgx.Tx) error {
		var err error
		id, err = outbox.InsertOutbox(b.ctx, tx, outbox.OutboxIntent{OperationKey: key, Class: keys.ClassCreditsConfirmation,
			Kind: "email", Destination: "billing@ws.example", WorkspaceID: "ws", ResourceKey: "stripe/a/test/invoice/in_1",
			Payload: map[string]string{"to": "billing@ws.example", "subject": "100 credits", "text": "thanks"}})
		return err
	}))
	return id
}

func (b *outboxBundle) send(t *testing.T, id int64) (activities.SendResult, error) {
	t.Helper()
	v, err := b.env.ExecuteActivity(b.acts.SendOutbox, activities.SendInput{ID: id})
	var res activities.SendResult
	if err == nil {
		require.NoError(t, v.Get(&res))
	}
	return res, err
}

func (b *outboxBundle) row(t *testing.T, id int64) *outbox.OutboxRow {
	o, err := outbox.GetOutbox(b.ctx, b.store.Pool, id)
	require.NoError(t, err)
	return o
}

// emailAPI serves the simulator's email API over real HTTP.
func emailAPI(t *testing.T, knobs simulator.EmailKnobs) (*simulator.Simulator, string) {
	sim := simulator.New(simulator.Config{Seed: 1, Email: knobs})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

func TestF5LostAnswerFromAnIdempotentEmailAPIIsRetriedWithTheSameKey(t *testing.T) {
	t.Parallel()
	sim, url := emailAPI(t, simulator.EmailKnobs{})
	b := newOutbox(t, &outbound.HTTPMailer{BaseURL: url, From: "h@x", Dedupes: true}, nil)
	id := b.confirmation(t, "credit-grant/x/in_1/initial-credit-grant:confirmation")

	sim.LoseNextEmailAnswers(1) // accepted, then the answer is lost
	_, err := b.send(t, id)
	require.Error(t, err)
	require.Equal(t, keys.OutboxUncertain, b.row(t, id).Status)

	res, err := b.send(t, id)
	require.NoError(t, err)
	require.Equal(t, keys.OutboxSent, res.Status)
	require.Equal(t, activities.PolicyRetrySameKey, res.Policy)
	row := b.row(t, id)
	require.Equal(t, activities.PolicyRetrySameKey, row.Policy, "the policy in force is on the row")
	require.Equal(t, 2, row.Attempts)

	emails := sim.Emails()
	require.Len(t, emails, 1, "the API deduped the retry on the Idempotency-Key")
	require.Equal(t, 2, emails[0].Posts)
	require.Equal(t, row.OperationKey, emails[0].IdempotencyKey)

	// A sent row is never sent again.
	res, err = b.send(t, id)
	require.NoError(t, err)
	require.Equal(t, keys.OutboxSent, res.Status)
	require.Equal(t, 2, sim.Emails()[0].Posts)
}

func TestF5LostAnswerWithoutIdempotencyFollowsTheClassPolicy(t *testing.T) {
	tests := []struct {
		name     string
		policies map[string]string
		status   string
		emails   int
	}{
		{"low-risk confirmation accepts a duplicate", nil, keys.OutboxSent, 2},
		{"high-impact class is held for review", map[string]string{keys.ClassCreditsConfirmation: activities.PolicyHoldForReview}, keys.OutboxHeld, 1},
	}
	t.Parallel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, url := emailAPI(t, simulator.EmailKnobs{NoIdempotency: true})
			policies, err := activities.ParsePolicies("", map[string]string{keys.ClassCreditsConfirmation: activities.PolicyAcceptDuplicate})
			require.NoError(t, err)
			for k, v := range tt.policies {
				policies[k] = v
			}
			b := newOutbox(t, &outbound.HTTPMailer{BaseURL: url, From: "h@x", Dedupes: false}, policies)
			id := b.confirmation(t, "op-"+tt.name)
			sim.LoseNextEmailAnswers(1)
			_, err = b.send(t, id)
			require.Error(t, err)
			res, err := b.send(t, id)
			require.NoError(t, err)
			require.Equal(t, tt.status, res.Status)
			require.Equal(t, tt.status, b.row(t, id).Status)
			require.Len(t, sim.Emails(), tt.emails)
			if tt.status == keys.OutboxHeld {
				require.Contains(t, b.row(t, id).LastError, "outcome is unknown")
				// The operator checks and releases it: it is sent once more.
				_, err := outbox.ReleaseOutbox(b.ctx, b.store.Pool, id)
				require.NoError(t, err)
				res, err := b.send(t, id)
				require.NoError(t, err)
				require.Equal(t, keys.OutboxSent, res.Status)
				require.Len(t, sim.Emails(), 2)
			}
		})
	}
}

func TestF5WorkerDiesAfterTheDestinationAcceptedBeforeTheRowWasMarkedSent(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	mailer := &outbound.SMTPMailer{Addr: mp.SMTPAddr, From: "h@test.local", LookupURL: mp.HTTPURL, Timeout: 5 * time.Second}
	b := newOutbox(t, mailer, map[string]string{keys.ClassCreditsConfirmation: activities.PolicyHoldForReview})
	id := b.confirmation(t, "op-crash")

	// The dead attempt: it recorded itself and handed the message to SMTP,
	// then the worker died before marking the row sent.
	ok, err := outbox.BeginOutboxAttempt(b.ctx, b.store.Pool, id, activities.PolicyHoldForReview, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	_, err = mailer.Send(b.ctx, outbound.Message{Key: b.row(t, id).OperationKey, To: "billing@ws.example", Subject: "100 credits", Text: "thanks"})
	require.NoError(t, err)

	// The next attempt asks Mailpit first: found, so it is not sent twice
	// (even though this class would otherwise be held).
	require.Eventually(t, func() bool {
		res, err := b.send(t, id)
		return err == nil && res.Status == keys.OutboxSent
	}, 10*time.Second, 200*time.Millisecond)
	require.Len(t, mailpitMessages(t, mp.HTTPURL), 1)
	require.Contains(t, b.row(t, id).LastError, "found at the destination")
}

func TestF5SMTPDownThenUp(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	b := newOutbox(t, &outbound.SMTPMailer{Addr: mp.SMTPAddr, From: "h@test.local", Timeout: 5 * time.Second}, nil)
	id := b.confirmation(t, "op-down")
	mp.Kill()
	for range 3 {
		_, err := b.send(t, id)
		require.Error(t, err)
		row := b.row(t, id)
		require.Equal(t, keys.OutboxPending, row.Status, "connection refused: certainly not delivered")
		require.Contains(t, row.LastError, "not delivered")
	}
	require.NoError(t, mp.Restart(context.Background()))
	res, err := b.send(t, id)
	require.NoError(t, err)
	require.Equal(t, keys.OutboxSent, res.Status)
	require.Len(t, mailpitMessages(t, mp.HTTPURL), 1)
	require.Equal(t, 4, b.row(t, id).Attempts)
}

// mailpitMessages returns the messages Mailpit holds.
func mailpitMessages(t *testing.T, base string) []map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/messages")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Messages
}
