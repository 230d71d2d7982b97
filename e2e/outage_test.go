package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// TestAPostgreSQLOutageIsRiddenOut stops the test's own PostgreSQL for
// 60 s while the worker is handling paid invoices (the provider API is slow,
// so most are mid-handling), then starts it again on the same data
// directory: no resource workflow fails, every event ends done, the credits
// are exact and every confirmation is sent (#13, scenario 2).
func TestAPostgreSQLOutageIsRiddenOut(t *testing.T) {
	t.Parallel()
	pg, dbURL := testenv.NewPostgres(t)
	email := simulator.New(simulator.Config{Seed: 13})
	srv := httptest.NewServer(email.Handler())
	t.Cleanup(srv.Close)
	s := newStack(t, stackOptions{databaseURL: dbURL, configure: func(c *config.Config) {
		c.Mailer, c.EmailAPIURL = "http", srv.URL
	}})
	w := newSimWorld(t, s, simulator.Config{API: simulator.APIKnobs{Latency: 2 * time.Second, LatencyJitter: 6 * time.Second}})
	const before, after = 30, 10
	pay := func(n int) []simulator.Event {
		var evs []simulator.Event
		for range n {
			_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
			require.NoError(t, err)
			evs = append(evs, paid)
		}
		return evs
	}
	done := func() int { return w.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'done'`) }

	w.send(t, pay(before)...)
	eventually(t, 60*time.Second, "the first event done", func() bool { return done() >= 1 })
	doneAtStop := done()
	require.NoError(t, pg.Stop())
	require.Less(t, doneAtStop, before, "events were still being handled when PostgreSQL stopped")
	t.Logf("PostgreSQL stopped with %d of %d events done", doneAtStop, before)
	time.Sleep(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, pg.Restart(ctx))

	w.send(t, pay(after)...)
	total := before + after
	eventually(t, 3*time.Minute, fmt.Sprintf("%d events settled", total), func() bool {
		return w.count(t, `SELECT count(*) FROM webhook_inbox WHERE status <> 'pending'`) == total
	})
	require.Equal(t, total, done(), "every event done, none exhausted or failed (%d exhausted)",
		w.count(t, `SELECT count(*) FROM webhook_inbox WHERE status = 'exhausted'`))
	require.EqualValues(t, 100*total, w.balance(t), "one grant per invoice")
	require.Equal(t, total, w.count(t, `SELECT count(*) FROM credit_grants`))
	eventually(t, 2*time.Minute, "every confirmation sent", func() bool {
		return w.count(t, `SELECT count(*) FROM outbox WHERE status = 'sent'`) == total
	})
	require.Equal(t, total, w.count(t, `SELECT count(*) FROM outbox`))
	require.Len(t, email.Emails(), total)

	list := func(query string) int {
		var n int
		var next []byte
		for {
			resp, err := s.client.ListWorkflow(s.ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: next})
			require.NoError(t, err)
			n += len(resp.Executions)
			if next = resp.NextPageToken; len(next) == 0 {
				return n
			}
		}
	}
	ours := fmt.Sprintf(`WorkflowType = 'ResourceWorkflow' AND SourceAccount = '%s'`, w.account)
	eventually(t, 30*time.Second, "the resource workflows visible", func() bool { return list(ours) >= total })
	require.Zero(t, list(ours+` AND ExecutionStatus = 'Failed'`), "no resource workflow failed")
}
