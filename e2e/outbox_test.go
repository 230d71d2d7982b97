package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func withMailpit(mp *devenv.Mailpit) func(*config.Config) {
	return func(c *config.Config) {
		c.Mailer, c.SMTPAddr, c.SMTPLookupURL = "smtp", mp.SMTPAddr, mp.HTTPURL
		c.OutboxBudget = 20
	}
}

func mailpitCount(t *testing.T, mp *devenv.Mailpit) int {
	t.Helper()
	resp, err := http.Get(mp.HTTPURL + "/api/v1/messages")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Total int `json:"total"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Total
}

// outboxStatus is the status of the world's one outbox row ("" before it exists).
func (w *simWorld) outboxStatus(t *testing.T) string {
	var st string
	err := w.store.Pool.QueryRow(w.ctx, `SELECT status FROM outbox`).Scan(&st)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	require.NoError(t, err)
	return st
}

func TestConfirmationEmailLeavesAfterTheCommitAndOnlyOnce(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	again, err := w.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)
	w.send(t, paid, again, paid)
	w.allDone(t, 2)
	eventually(t, 30*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	require.Equal(t, 1, mailpitCount(t, mp))
}

func f5SMTPDownThenUp(t *testing.T) {
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	mp.Kill()
	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1) // the grant does not wait for the email
	eventually(t, 30*time.Second, "a failed send attempt", func() bool {
		var attempts int
		require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT attempts FROM outbox`).Scan(&attempts))
		return attempts >= 2
	})
	require.Equal(t, keys.OutboxPending, w.outboxStatus(t))
	require.NoError(t, mp.Restart(context.Background()))
	eventually(t, 60*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	require.Equal(t, 1, mailpitCount(t, mp))
}

func f5OutboxOfATerminatedWorkflow(t *testing.T) {
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	mp.Kill()
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1)
	id := keys.ResourceWorkflowID(keys.Resource{Provider: "stripe", Account: w.account, Environment: "test", Kind: "invoice", ID: inv.ID})
	// An operator terminates the workflow while the send is being retried.
	require.NoError(t, w.client.TerminateWorkflow(w.ctx, id, "", "test: terminated mid-send"))
	require.NoError(t, mp.Restart(context.Background()))
	eventually(t, 60*time.Second, "the sweeper to re-dispatch the unsent row", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	require.Equal(t, 1, mailpitCount(t, mp))
}

func TestFeedbackAlertReachesTheTeamWebhookSigned(t *testing.T) {
	t.Parallel()
	secret := simulator.StandardSecret("team-oncall")
	verifier, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	var mu sync.Mutex
	var got []map[string]any
	team := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	}))
	defer team.Close()
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	require.NoError(t, outbox.UpsertDestination(w.ctx, w.store.Pool, w.store.Keys, outbox.Destination{
		WorkspaceID: w.workspace, Name: "oncall", Kind: "webhook", Target: team.URL, Secret: secret, Enabled: true}))
	item, ev := w.sim.CreateFeedback(w.project, "the mobile app crashes on login")
	w.send(t, ev, ev)
	eventually(t, 30*time.Second, "the alert to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	require.Equal(t, item.ID, got[0]["feedback_id"])
	require.Equal(t, "the mobile app crashes on login", got[0]["message"])
}
