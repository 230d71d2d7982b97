package simulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripego "github.com/stripe/stripe-go/v84"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

// getThin asks GET /v2/core/events/{id} with Stripe-Context (when set).
func (b apiBundle) getThin(t *testing.T, id, stripeContext string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.srv.URL+"/v2/core/events/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+simulator.DefaultAPIKey)
	if stripeContext != "" {
		req.Header.Set("Stripe-Context", stripeContext)
	}
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

func TestAThinEventIsTheThinTwinOfItsSnapshotAndStripeGoReadsIt(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, simulator.Config{Seed: 21, Connect: true, Clock: fixedClock})
	acct := b.sim.Accounts()[1]
	inv, snap, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: acct})
	require.NoError(t, err)

	thin, err := b.sim.ThinEvent(snap.ID)
	require.NoError(t, err)
	again, err := b.sim.ThinEvent(snap.ID)
	require.NoError(t, err)
	require.Equal(t, thin.ID, again.ID, "one twin per snapshot")
	require.True(t, thin.Thin)
	require.Equal(t, snap.ID, thin.Snapshot)
	require.Equal(t, "v1.invoice.paid", thin.Type)
	require.Regexp(t, `^evt_test_[0-9A-Za-z]{48}$`, thin.ID)

	// stripe-go's event-notification decoder reads what the sender sends.
	c, err := stripego.EventNotificationFromJSON(thin.Body, stripego.Client{})
	require.NoError(t, err)
	n, ok := c.(*stripego.UnknownEventNotification)
	require.True(t, ok, "%T", c)
	require.Equal(t, thin.ID, n.ID)
	require.Equal(t, "v2.core.event", n.Object)
	require.Equal(t, "v1.invoice.paid", n.Type)
	require.False(t, n.Livemode)
	require.Equal(t, fixedNow, n.Created.UTC())
	require.NotNil(t, n.Context)
	require.Equal(t, acct, *n.Context.StringPtr(), "with Connect the context is the account")
	require.Equal(t, &stripego.V2CoreEventRelatedObject{ID: inv.ID, Type: "invoice", URL: "/v1/invoices/" + inv.ID}, n.RelatedObject)
	var raw struct {
		SnapshotEvent string `json:"snapshot_event"`
		Data          any    `json:"data"`
	}
	require.NoError(t, json.Unmarshal(thin.Body, &raw))
	require.Equal(t, snap.ID, raw.SnapshotEvent)
	require.Nil(t, raw.Data, "a thin event carries no snapshot")

	_, err = b.sim.ThinEvent("evt_nope")
	require.Error(t, err)
}

func TestTheV2EventRouteServesThinEventsToTheirContext(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, simulator.Config{Seed: 22, Connect: true})
	accts := b.sim.Accounts()
	_, snap, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[1]})
	require.NoError(t, err)
	thin, err := b.sim.ThinEvent(snap.ID)
	require.NoError(t, err)
	before := b.sim.Stats().API

	status, body := b.getThin(t, thin.ID, accts[1])
	require.Equal(t, http.StatusOK, status, string(body))
	require.JSONEq(t, string(thin.Body), string(body))

	status, _ = b.getThin(t, thin.ID, "")
	require.Equal(t, http.StatusNotFound, status, "the platform's own scope does not see a connected account's event")
	status, _ = b.getThin(t, thin.ID, accts[0])
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.getThin(t, thin.ID, "acct_unknown")
	require.Equal(t, http.StatusForbidden, status)
	status, _ = b.getThin(t, snap.ID, accts[1])
	require.Equal(t, http.StatusNotFound, status, "a snapshot event is not a v2 event")

	after := b.sim.Stats().API
	require.Equal(t, 4, after.ScopedByContext-before.ScopedByContext)
	require.Equal(t, 0, after.ScopedByAccount-before.ScopedByAccount)

	// The v1 routes take Stripe-Context as Stripe-Account.
	a := b.get(t, "/v1/events/"+snap.ID, simulator.DefaultAPIKey, accts[1])
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, 1, b.sim.Stats().API.ScopedByAccount-after.ScopedByAccount)
}

func TestBothScopeHeadersMustAgree(t *testing.T) {
	t.Parallel()
	b := setupAPI(t, simulator.Config{Seed: 23, Connect: true})
	accts := b.sim.Accounts()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.srv.URL+"/v1/account", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+simulator.DefaultAPIKey)
	req.Header.Set("Stripe-Account", accts[0])
	req.Header.Set("Stripe-Context", accts[1])
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestThinModesShapeWhatIsSentAndKeepTheSeedsIDs(t *testing.T) {
	t.Parallel()
	plan := func(mode string) (*simulator.Simulator, simulator.Plan) {
		sim := simulator.New(fast(simulator.Config{Seed: 24, ThinEvents: mode,
			Scenario: simulator.ScenarioKnobs{CustomersPerAccount: 2, FeedbackPerProject: 1}}))
		return sim, sim.Generate()
	}
	_, off := plan(simulator.ThinOff)
	thinSim, thin := plan(simulator.ThinOnly)
	_, both := plan(simulator.ThinBoth)

	var snapshots []string
	for _, d := range off.Deliveries {
		require.False(t, d.Event.Thin)
		if d.Event.Provider == simulator.ProviderStripe {
			snapshots = append(snapshots, d.Event.ID)
		}
	}
	require.NotEmpty(t, snapshots)
	var twins, stripeThin []string
	for _, d := range thin.Deliveries {
		if d.Event.Provider == simulator.ProviderStripe {
			require.True(t, d.Event.Thin, d.Event.ID)
			twins = append(twins, d.Event.Snapshot)
			stripeThin = append(stripeThin, d.Event.ID)
		}
	}
	require.Equal(t, snapshots, twins, "the same snapshot events, each as its thin twin: thin ids come from their own stream")
	var pairs []string
	for _, d := range both.Deliveries {
		if d.Event.Provider == simulator.ProviderStripe {
			pairs = append(pairs, d.Event.ID)
		}
	}
	require.Len(t, pairs, 2*len(snapshots))
	for i, id := range snapshots {
		require.Equal(t, id, pairs[2*i])
		require.Equal(t, stripeThin[i], pairs[2*i+1], "each snapshot then its twin, same ids in every mode")
	}

	// Delivered thin-only, no snapshot event counts as dropped: its twin carried it.
	rc := newReceiver(t, nil)
	rep, err := thinSim.Deliver(context.Background(), targets(rc), thin)
	require.NoError(t, err)
	require.Len(t, rep.Results, len(thin.Deliveries))
	truth := thinSim.Truth()
	require.Empty(t, truth.DroppedEvents)
	require.Empty(t, truth.UnackedEvents)
	var sentThin int
	for _, r := range rc.requests() {
		var doc struct {
			Object string `json:"object"`
		}
		require.NoError(t, json.Unmarshal(r.body, &doc))
		if doc.Object == "v2.core.event" {
			sentThin++
			require.NotEmpty(t, r.header.Get("Stripe-Signature"))
		}
	}
	require.Equal(t, len(snapshots), sentThin)
}

func TestAConflictingThinEventKeepsItsIDAndChangesItsBody(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Config{Seed: 25, Clock: fixedClock})
	_, snap, err := sim.PayInvoice(simulator.InvoiceOptions{})
	require.NoError(t, err)
	thin, err := sim.ThinEvent(snap.ID)
	require.NoError(t, err)
	c := sim.Conflicting(thin)
	require.Equal(t, thin.ID, c.ID)
	require.True(t, c.Conflicting)
	require.NotEqual(t, thin.Body, c.Body)
	var doc struct {
		Created time.Time `json:"created"`
	}
	require.NoError(t, json.Unmarshal(c.Body, &doc))
	require.Equal(t, fixedNow.Add(time.Second), doc.Created.UTC())
}
