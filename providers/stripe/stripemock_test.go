package stripe_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

// stripe-mock (tools/stripe-mock) answers from Stripe's own OpenAPI
// specification and fixtures, so these tests read what Stripe's API
// really returns, field for field, where the simulator's answers are
// ours. It is stateless (docs/providers.md): every request gets its
// resource's fixture, the path's id reflected, so it proves parsing and
// requests, never behaviour (404s, states, pagination, Connect scopes).

const mockKey = "sk_test_123"

// fixture is stripe-mock's raw answer to GET path, read without our client.
func fixture(t *testing.T, base, path string) gjson.Result {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+mockKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.True(t, gjson.ValidBytes(b))
	return gjson.ParseBytes(b)
}

func mockClient(t *testing.T) (*stripe.Client, string) {
	t.Helper()
	base := testenv.StripeMock(t)
	return stripe.NewClient(stripe.ClientConfig{APIKey: mockKey, BaseURL: base, PlatformAccount: "acct_platform",
		HTTPClient: &http.Client{Timeout: 10 * time.Second}}), base
}

func TestStripesOwnFixturesParse(t *testing.T) {
	t.Parallel()
	c, base := mockClient(t)
	ctx := context.Background()

	t.Run("own account", func(t *testing.T) {
		got, err := c.OwnAccount(ctx)
		require.NoError(t, err)
		// The one fixture whose id stripe-mock draws anew for every answer.
		require.Regexp(t, `^acct_[0-9A-Za-z]+$`, got)
		require.Regexp(t, `^acct_[0-9A-Za-z]+$`, fixture(t, base, "/v1/account").Get("id").String())
	})

	t.Run("invoice", func(t *testing.T) {
		for _, account := range []string{"", "acct_connected"} {
			inv, err := c.FetchInvoice(ctx, account, "in_1Fixture")
			require.NoError(t, err)
			f := fixture(t, base, "/v1/invoices/in_1Fixture")
			require.Equal(t, "in_1Fixture", inv.ID, "stripe-mock reflects the id")
			require.Equal(t, account, inv.Account)
			require.Equal(t, f.Get("status").String(), inv.Status)
			require.Equal(t, f.Get("status").String() == "paid", inv.Paid)
			require.Equal(t, f.Get("amount_paid").Int(), inv.AmountPaid)
			require.Equal(t, f.Get("total").Int(), inv.Total)
			require.Equal(t, f.Get("currency").String(), inv.Currency)
			require.Equal(t, f.Get("customer").String(), inv.Customer)
			require.Equal(t, f.Get("livemode").Bool(), inv.Livemode)
			require.Equal(t, f.Get("parent.subscription_details.subscription").String(), inv.SubscriptionID)
			require.JSONEq(t, f.Raw, string(inv.Raw))
		}
	})

	t.Run("subscription", func(t *testing.T) {
		sub, err := c.FetchSubscription(ctx, "", "sub_1Fixture")
		require.NoError(t, err)
		f := fixture(t, base, "/v1/subscriptions/sub_1Fixture")
		require.Equal(t, "sub_1Fixture", sub.ID)
		require.Equal(t, f.Get("status").String(), sub.Status)
		require.Equal(t, f.Get("customer").String(), sub.Customer)
		require.Equal(t, f.Get("cancel_at_period_end").Bool(), sub.CancelAtPeriodEnd)
		var end int64
		for _, it := range f.Get("items.data").Array() {
			end = max(end, it.Get("current_period_end").Int())
		}
		require.Equal(t, end, sub.CurrentPeriodEnd.Unix(), "since 2025-03-31 the period is the items'")
		require.Equal(t, f.Get("canceled_at").Int(), unixOrZero(sub.CanceledAt))
		require.Equal(t, f.Get("ended_at").Int(), unixOrZero(sub.EndedAt))
		require.False(t, sub.HasVersion, "Stripe has no version")
	})

	t.Run("credit note", func(t *testing.T) {
		cn, err := c.FetchCreditNote(ctx, "", "cn_1Fixture")
		require.NoError(t, err)
		f := fixture(t, base, "/v1/credit_notes/cn_1Fixture")
		require.Equal(t, "cn_1Fixture", cn.ID)
		require.Equal(t, f.Get("invoice").String(), cn.Invoice)
		require.NotEmpty(t, cn.Invoice)
		require.Equal(t, f.Get("status").String(), cn.Status)
		require.Contains(t, []string{providers.CreditNoteIssued, providers.CreditNoteVoid}, cn.Status)
		require.Equal(t, f.Get("total").Int(), cn.Total)
		require.Equal(t, f.Get("currency").String(), cn.Currency)
	})

	t.Run("subscription list", func(t *testing.T) {
		page, err := c.ListSubscriptions(ctx, "acct_connected", providers.ListQuery{Limit: 3})
		require.NoError(t, err)
		f := fixture(t, base, "/v1/subscriptions?status=all&limit=3")
		require.Len(t, page.Items, len(f.Get("data").Array()))
		require.NotEmpty(t, page.Items)
		require.Equal(t, f.Get("has_more").Bool(), page.HasMore)
		for i, s := range page.Items {
			require.Equal(t, f.Get("data").Array()[i].Get("id").String(), s.ID)
			require.Equal(t, "acct_connected", s.Account)
			require.NotEmpty(t, s.Raw)
		}
	})

	t.Run("event list", func(t *testing.T) {
		since := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, types := range [][]string{nil, {"invoice.paid"}, {"invoice.paid", "customer.subscription.updated"}} {
			page, err := c.ListEvents(ctx, "", providers.EventQuery{Since: since, Types: types, Limit: 5})
			require.NoError(t, err, "stripe-mock validates the list's parameters against Stripe's specification")
			// It ignores the filters (stateless): the same fixture list whatever the types.
			q := url.Values{"limit": {"5"}}
			f := fixture(t, base, "/v1/events?"+q.Encode())
			require.Len(t, page.Items, len(f.Get("data").Array()))
			require.NotEmpty(t, page.Items)
			for i, e := range page.Items {
				fe := f.Get("data").Array()[i]
				require.Equal(t, fe.Get("id").String(), e.ID)
				require.Equal(t, fe.Get("type").String(), e.Type)
				require.Equal(t, fe.Get("created").Int(), e.Created.Unix())
				require.JSONEq(t, fe.Raw, string(e.Raw))
			}
		}
	})
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
