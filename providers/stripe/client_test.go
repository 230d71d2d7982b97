package stripe_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

type bundle struct {
	sim    *simulator.Simulator
	srv    *httptest.Server
	client *stripe.Client
}

func setup(t *testing.T, cfg simulator.Config) bundle {
	t.Helper()
	sim := simulator.New(cfg)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return bundle{sim: sim, srv: srv, client: stripe.NewClient(stripe.ClientConfig{
		APIKey: simulator.DefaultAPIKey, BaseURL: srv.URL,
		HTTPClient: &http.Client{Timeout: 2 * time.Second},
	})}
}

func TestFetchInvoice(t *testing.T) {
	t.Parallel()

	b := setup(t, simulator.Config{Seed: 1})
	sub, _ := b.sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
	inv, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{Subscription: sub.ID, Amount: 1234})
	require.NoError(t, err)

	got, err := b.client.FetchInvoice(context.Background(), inv.Account, inv.ID)
	require.NoError(t, err)
	require.Equal(t, inv.ID, got.ID)
	require.Equal(t, inv.Account, got.Account)
	require.Equal(t, sub.Customer, got.Customer)
	require.Equal(t, "paid", got.Status)
	require.True(t, got.Paid)
	require.EqualValues(t, 1234, got.AmountPaid)
	require.Equal(t, "usd", got.Currency)
	require.Equal(t, sub.ID, got.SubscriptionID)
	require.JSONEq(t, string(got.Raw), string(mustGetRaw(t, b, "/v1/invoices/"+inv.ID)))
}

func mustGetRaw(t *testing.T, b bundle, path string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+simulator.DefaultAPIKey)
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	return raw
}

func TestFetchSubscription(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		versions    bool
		atPeriodEnd bool
		status      string
	}{
		{name: "canceled now, no version", status: "canceled"},
		{name: "cancel at period end, versioned", versions: true, atPeriodEnd: true, status: "active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, simulator.Config{Seed: 2, Versions: tt.versions, Connect: true})
			acct := b.sim.Accounts()[1]
			sub, _ := b.sim.CreateSubscription(acct, "", simulator.SubscriptionOptions{})
			_, err := b.sim.CancelSubscription(sub.ID, tt.atPeriodEnd)
			require.NoError(t, err)
			want, _ := b.sim.Subscription(sub.ID)
			cur := want.Current()

			got, err := b.client.FetchSubscription(context.Background(), acct, sub.ID)
			require.NoError(t, err)
			require.Equal(t, sub.ID, got.ID)
			require.Equal(t, acct, got.Account)
			require.Equal(t, sub.Customer, got.Customer)
			require.Equal(t, tt.status, got.Status)
			require.Equal(t, tt.atPeriodEnd, got.CancelAtPeriodEnd)
			require.Equal(t, cur.CurrentPeriodEnd.Unix(), got.CurrentPeriodEnd.Unix())
			require.Equal(t, cur.CanceledAt.Unix(), got.CanceledAt.Unix())
			if tt.atPeriodEnd {
				require.True(t, got.EndedAt.IsZero(), "null ended_at")
			} else {
				require.Equal(t, cur.EndedAt.Unix(), got.EndedAt.Unix())
			}
			require.Equal(t, tt.versions, got.HasVersion)
			if tt.versions {
				require.EqualValues(t, 2, got.Version)
			}
			require.NotEmpty(t, got.Raw)

			// Without Stripe-Account the platform sees nothing: not found, not a state.
			_, err = b.client.FetchSubscription(context.Background(), "", sub.ID)
			require.True(t, providers.IsNotFound(err), err)
		})
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		fault      *simulator.Fault
		id         string
		key        string
		account    string
		notFound   bool
		retryable  bool
		permanent  bool
		retryAfter time.Duration
		status     int
	}{
		{name: "404 is not found", id: "in_missing", notFound: true, status: 404},
		{name: "spurious 404 is not found", fault: &simulator.Fault{Status: 404}, notFound: true, status: 404},
		{name: "429 is retryable with Retry-After", fault: &simulator.Fault{Status: 429, RetryAfter: 7 * time.Second}, retryable: true, retryAfter: 7 * time.Second, status: 429},
		{name: "500 is retryable", fault: &simulator.Fault{Status: 500}, retryable: true, status: 500},
		{name: "503 is retryable", fault: &simulator.Fault{Status: 503}, retryable: true, status: 503},
		{name: "403 is permanent, not cancelled", fault: &simulator.Fault{Status: 403}, permanent: true, status: 403},
		{name: "unknown account is 403", account: "acct_unknown", permanent: true, status: 403},
		{name: "401 is permanent", key: "sk_test_wrong", permanent: true, status: 401},
		{name: "400 is permanent", fault: &simulator.Fault{Status: 400}, permanent: true, status: 400},
		{name: "timeout is retryable", fault: &simulator.Fault{Delay: 5 * time.Second}, retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, simulator.Config{Seed: 3})
			inv, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{})
			require.NoError(t, err)
			id := inv.ID
			if tt.id != "" {
				id = tt.id
			}
			if tt.fault != nil {
				b.sim.InjectAPIFault(*tt.fault)
			}
			client := b.client
			if tt.key != "" || tt.fault != nil && tt.fault.Delay > 0 {
				key := simulator.DefaultAPIKey
				if tt.key != "" {
					key = tt.key
				}
				client = stripe.NewClient(stripe.ClientConfig{
					APIKey: key, BaseURL: b.srv.URL, HTTPClient: &http.Client{Timeout: 200 * time.Millisecond},
				})
			}
			before := b.sim.Stats().API.Requests

			got, err := client.FetchInvoice(context.Background(), tt.account, id)
			require.Error(t, err)
			require.Equal(t, providers.Invoice{}, got, "an error is never a state")
			require.Equal(t, tt.notFound, providers.IsNotFound(err), err)
			require.Equal(t, tt.retryable, providers.IsRetryable(err), err)
			require.Equal(t, tt.permanent, providers.IsPermanent(err), err)
			ra, ok := providers.RetryAfter(err)
			require.Equal(t, tt.retryAfter != 0, ok)
			require.Equal(t, tt.retryAfter, ra)
			var pe *providers.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.status, pe.StatusCode)
			require.Equal(t, before+1, b.sim.Stats().API.Requests, "stripe-go must not retry on its own")
		})
	}
}

func TestErrorMappingWithoutAStripeBody(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		status    int
		body      string
		retryable bool
		permanent bool
	}{
		{name: "proxy 502 page", status: 502, body: "<html>bad gateway</html>", retryable: true},
		{name: "broken success body", status: 200, body: "{not json", permanent: true},
		{name: "429 with a date", status: 429, body: "slow down", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				calls.Add(1)
				w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			c := stripe.NewClient(stripe.ClientConfig{APIKey: "sk", BaseURL: srv.URL, Now: func() time.Time { return now }})
			_, err := c.FetchSubscription(context.Background(), "", "sub_1")
			require.Error(t, err)
			require.Equal(t, tt.retryable, providers.IsRetryable(err), err)
			require.Equal(t, tt.permanent, providers.IsPermanent(err), err)
			require.False(t, providers.IsNotFound(err))
			ra, ok := providers.RetryAfter(err)
			require.True(t, ok)
			require.Equal(t, 90*time.Second, ra, "the date is 90 s after the client's clock")
			require.EqualValues(t, 1, calls.Load(), "stripe-go must not retry on its own")
		})
	}
}

func TestConnectionRefusedIsRetryable(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := stripe.NewClient(stripe.ClientConfig{APIKey: "sk", BaseURL: "http://" + addr})
	_, err = c.ListEvents(context.Background(), "", providers.EventQuery{})
	require.True(t, providers.IsRetryable(err), err)
	_, ok := providers.RetryAfter(err)
	require.False(t, ok)
}

func TestListSubscriptionsPagesWithCursors(t *testing.T) {
	t.Parallel()

	b := setup(t, simulator.Config{Seed: 4, Versions: true})
	want := map[string]bool{}
	var first string
	for i := range 7 {
		sub, _ := b.sim.CreateSubscription("", "", simulator.SubscriptionOptions{})
		want[sub.ID] = true
		if i == 0 {
			first = sub.ID
		}
	}
	_, err := b.sim.CancelSubscription(first, false)
	require.NoError(t, err)

	var pages []int
	got := map[string]providers.Subscription{}
	cursor := ""
	for {
		page, err := b.client.ListSubscriptions(context.Background(), "", providers.ListQuery{Cursor: cursor, Limit: 3})
		require.NoError(t, err)
		pages = append(pages, len(page.Items))
		for _, s := range page.Items {
			require.NotContains(t, got, s.ID, "pages do not overlap")
			got[s.ID] = s
			require.True(t, s.HasVersion)
			require.NotEmpty(t, s.Raw)
		}
		if !page.HasMore {
			require.Empty(t, page.NextCursor)
			break
		}
		require.Equal(t, page.Items[len(page.Items)-1].ID, page.NextCursor)
		cursor = page.NextCursor
	}
	require.Equal(t, []int{3, 3, 1}, pages)
	require.Len(t, got, len(want))
	require.Equal(t, "canceled", got[first].Status, "canceled ones are listed too")
}

func TestListEventsSinceTypesAndAccount(t *testing.T) {
	t.Parallel()

	b := setup(t, simulator.Config{Seed: 5, Connect: true})
	accts := b.sim.Accounts()
	var paid []string
	for range 5 {
		_, ev, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[0]})
		require.NoError(t, err)
		paid = append(paid, ev.ID)
	}
	b.sim.CreateSubscription(accts[0], "", simulator.SubscriptionOptions{})
	_, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[1]})
	require.NoError(t, err)

	var got []providers.Event
	cursor := ""
	for {
		page, err := b.client.ListEvents(context.Background(), accts[0], providers.EventQuery{
			Since: time.Now().Add(-time.Hour), Types: []string{"invoice.paid"}, Cursor: cursor, Limit: 2,
		})
		require.NoError(t, err)
		got = append(got, page.Items...)
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	require.Len(t, got, 5, "only this account's invoice.paid events")
	for i, e := range got {
		require.Equal(t, paid[len(paid)-1-i], e.ID, "newest first")
		require.Equal(t, "invoice.paid", e.Type)
		require.Equal(t, accts[0], e.Account)
		require.WithinDuration(t, time.Now(), e.Created, time.Minute)
		var raw struct {
			ID   string `json:"id"`
			Data struct {
				Object struct {
					Object string `json:"object"`
				} `json:"object"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(e.Raw, &raw))
		require.Equal(t, e.ID, raw.ID)
		require.Equal(t, "invoice", raw.Data.Object.Object)
	}

	page, err := b.client.ListEvents(context.Background(), accts[0], providers.EventQuery{
		Types: []string{"invoice.paid", "customer.subscription.created"}, Limit: 100,
	})
	require.NoError(t, err)
	require.Len(t, page.Items, 6, "several types")

	page, err = b.client.ListEvents(context.Background(), accts[0], providers.EventQuery{Since: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Empty(t, page.Items)
}

func TestDroppedEventsAreOnlyInTheEventsList(t *testing.T) {
	t.Parallel()

	b := setup(t, simulator.Config{Seed: 6, Delivery: simulator.DeliveryKnobs{DropRate: 0.5, TimeScale: 1e-6},
		Scenario: simulator.ScenarioKnobs{FeedbackPerProject: -1}})
	var (
		mu       sync.Mutex
		received []string
	)
	intake := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var e struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&e)
		mu.Lock()
		received = append(received, e.ID)
		mu.Unlock()
	}))
	t.Cleanup(intake.Close)
	rep, err := b.sim.Deliver(context.Background(), simulator.Targets{
		Stripe: simulator.Endpoint{URL: intake.URL, Secrets: []string{"whsec_x"}},
	}, func() simulator.Plan { p := b.sim.Generate(); p.Concurrency = 1; return p }())
	require.NoError(t, err)

	truth := b.sim.Truth()
	require.NotEmpty(t, truth.DroppedEvents)
	listed := map[string]bool{}
	cursor := ""
	for {
		page, err := b.client.ListEvents(context.Background(), "", providers.EventQuery{Cursor: cursor, Limit: 100})
		require.NoError(t, err)
		for _, e := range page.Items {
			listed[e.ID] = true
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	for _, d := range truth.DroppedEvents {
		require.True(t, listed[d.ID], "a dropped event is in the events list")
		require.NotContains(t, received, d.ID, "and was never delivered")
	}
	require.Len(t, received, len(rep.Results)-len(truth.DroppedEvents))
}

func connectClient(t *testing.T, seed uint64) (bundle, []string) {
	t.Helper()
	b := setup(t, simulator.Config{Seed: seed, Connect: true})
	b.client = stripe.NewClient(stripe.ClientConfig{APIKey: simulator.DefaultAPIKey, BaseURL: b.srv.URL,
		PlatformAccount: simulator.DefaultPlatformAccount, HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	return b, b.sim.Accounts()
}

// TestFetchAThinEventAndItsObjectInItsContext: the calls made for a thin
// event send its context as Stripe-Context; the v1 fetches by account keep
// Stripe-Account.
func TestFetchAThinEventAndItsObjectInItsContext(t *testing.T) {
	t.Parallel()
	b, accts := connectClient(t, 7)
	inv, snap, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[1], Amount: 4200})
	require.NoError(t, err)
	thin, err := b.sim.ThinEvent(snap.ID)
	require.NoError(t, err)
	ctx := context.Background()
	stats := func() simulator.APIStats { return b.sim.Stats().API }

	before := stats()
	ev, err := b.client.FetchEvent(ctx, accts[1], thin.ID)
	require.NoError(t, err)
	require.Equal(t, 1, stats().ScopedByContext-before.ScopedByContext, "Stripe-Context, not Stripe-Account")
	require.Equal(t, 0, stats().ScopedByAccount-before.ScopedByAccount)
	require.Equal(t, thin.ID, ev.ID)
	require.Equal(t, "v1.invoice.paid", ev.Type)
	require.Equal(t, accts[1], ev.Context)
	require.False(t, ev.Livemode)
	require.WithinDuration(t, time.Now(), ev.Created, time.Minute)
	require.Equal(t, &providers.RelatedObject{ID: inv.ID, Type: "invoice", URL: "/v1/invoices/" + inv.ID}, ev.Related)
	require.Equal(t, snap.ID, ev.SnapshotEvent)
	require.Nil(t, ev.Data)
	require.JSONEq(t, string(thin.Body), string(ev.Raw))

	before = stats()
	obj, err := b.client.FetchRelatedObject(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, 1, stats().ScopedByContext-before.ScopedByContext)
	got, err := b.client.FetchInvoice(ctx, accts[1], inv.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(got.Raw), string(obj), "the related object is the invoice as fetched")
	require.EqualValues(t, 4200, got.AmountPaid)
	require.Equal(t, 1, stats().ScopedByAccount-before.ScopedByAccount, "a v1 fetch by a connected account keeps Stripe-Account")

	// The wrong context sees nothing; an unknown one is refused.
	_, err = b.client.FetchEvent(ctx, accts[0], thin.ID)
	require.True(t, providers.IsNotFound(err), err)
	_, err = b.client.FetchEvent(ctx, "acct_unknown", thin.ID)
	require.True(t, providers.IsPermanent(err), err)
	_, err = b.client.FetchEvent(ctx, accts[1], "evt_test_missing")
	require.True(t, providers.IsNotFound(err), err)
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, http.StatusNotFound, pe.StatusCode)
	require.Equal(t, "resource_missing", pe.Code)
}

func TestThinEventCallsMapErrorsAsEveryCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      simulator.Fault
		retryable  bool
		retryAfter time.Duration
	}{
		{"429 with Retry-After", simulator.Fault{Path: "/v2/", Status: 429, RetryAfter: 3 * time.Second}, true, 3 * time.Second},
		{"503", simulator.Fault{Path: "/v2/", Status: 503}, true, 0},
		{"403", simulator.Fault{Path: "/v2/", Status: 403}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, accts := connectClient(t, 8)
			_, snap, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[1]})
			require.NoError(t, err)
			thin, err := b.sim.ThinEvent(snap.ID)
			require.NoError(t, err)
			b.sim.InjectAPIFault(tt.fault)
			before := b.sim.Stats().API.Requests
			got, err := b.client.FetchEvent(context.Background(), accts[1], thin.ID)
			require.Error(t, err)
			require.Equal(t, providers.ThinEvent{}, got, "an error is never a state")
			require.Equal(t, tt.retryable, providers.IsRetryable(err), err)
			require.Equal(t, !tt.retryable, providers.IsPermanent(err), err)
			ra, ok := providers.RetryAfter(err)
			require.Equal(t, tt.retryAfter != 0, ok)
			require.Equal(t, tt.retryAfter, ra)
			require.Equal(t, before+1, b.sim.Stats().API.Requests, "stripe-go must not retry on its own")
		})
	}
}

func TestFetchRelatedObjectOnlyFollowsStripeAPIPathsToTheObjectNamed(t *testing.T) {
	t.Parallel()
	b, accts := connectClient(t, 9)
	inv, _, err := b.sim.PayInvoice(simulator.InvoiceOptions{Account: accts[1]})
	require.NoError(t, err)
	before := b.sim.Stats().API.Requests
	for _, u := range []string{"https://evil.example/v1/invoices/" + inv.ID, "//evil.example/v1/invoices/x", "/v1/invoices/../account",
		"/v1/invoices/" + inv.ID + "?expand[]=customer", "/v1/invoices/x#y", "v1/invoices/x", "/v3/things/x", ""} {
		_, err := b.client.FetchRelatedObject(context.Background(), providers.ThinEvent{ID: "evt_1", Context: accts[1],
			Related: &providers.RelatedObject{ID: inv.ID, Type: "invoice", URL: u}})
		require.True(t, providers.IsPermanent(err), "%q: %v", u, err)
	}
	_, err = b.client.FetchRelatedObject(context.Background(), providers.ThinEvent{ID: "evt_1"})
	require.True(t, providers.IsPermanent(err), "no related object")
	require.Equal(t, before, b.sim.Stats().API.Requests, "nothing was asked")

	_, err = b.client.FetchRelatedObject(context.Background(), providers.ThinEvent{ID: "evt_1", Context: accts[1],
		Related: &providers.RelatedObject{ID: "in_other", Type: "invoice", URL: "/v1/invoices/" + inv.ID}})
	require.True(t, providers.IsPermanent(err), "the answer is another object: %v", err)
	_, err = b.client.FetchRelatedObject(context.Background(), providers.ThinEvent{ID: "evt_1", Context: accts[1],
		Related: &providers.RelatedObject{ID: inv.ID, Type: "subscription", URL: "/v1/invoices/" + inv.ID}})
	require.True(t, providers.IsPermanent(err), "the answer is another type: %v", err)
}

// A context path (an organization's) cannot travel as Stripe-Account.
func TestAContextPathIsSentAsStripeContext(t *testing.T) {
	t.Parallel()
	b, _ := connectClient(t, 10)
	before := b.sim.Stats().API
	_, err := b.client.FetchInvoice(context.Background(), "acct_org/acct_conn", "in_1")
	require.True(t, providers.IsPermanent(err), "the simulator has no organizations: 403")
	after := b.sim.Stats().API
	require.Equal(t, 1, after.ScopedByContext-before.ScopedByContext)
	require.Equal(t, 0, after.ScopedByAccount-before.ScopedByAccount)
}
