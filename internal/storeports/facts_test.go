package storeports_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/storeports"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
)

// TestFactsAdmitBooksConnectEventsUnderTheListedAccount: a pass lists a
// Connect account's events under its Stripe-Account; items that do not name
// the account are that account's (not the platform's, and not rejected),
// and one naming another account is rejected.
func TestFactsAdmitBooksConnectEventsUnderTheListedAccount(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "connect", Provider: "stripe", Environment: "live",
		Account: "acct_platform", Secrets: []string{"whsec_x"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "connect", "acct_c1", "ws_c1"))
	require.NoError(t, endpoints.LinkAccount(ctx, st, "connect", "acct_c2", "ws_c2"))
	item := func(id, account string) providers.Event {
		acct := ""
		if account != "" {
			acct = `"account":"` + account + `",`
		}
		return providers.Event{ID: id, Type: "invoice.paid", Account: "acct_c1",
			Raw: json.RawMessage(`{"id":"` + id + `","object":"event","type":"invoice.paid","livemode":true,` + acct +
				`"created":1760000000,"data":{"object":{"id":"in_` + id + `","object":"invoice"}}}`)}
	}
	got, err := storeports.Facts{Store: st}.Admit(ctx, "connect", "acct_c1",
		[]providers.Event{item("evt_nofield", ""), item("evt_named", "acct_c1"), item("evt_other", "acct_c2")})
	require.NoError(t, err)
	require.Len(t, got, 3)

	require.Equal(t, ports.Admitted, got[0].Outcome, "%v", got[0].Reason)
	require.Equal(t, keys.Event{Provider: "stripe", Account: "acct_c1", Environment: "live", EventID: "evt_nofield"}, got[0].Key)
	row, err := inbox.GetInboxEvent(ctx, st.Pool, got[0].Key)
	require.NoError(t, err)
	require.Equal(t, "ws_c1", row.WorkspaceID)
	require.Equal(t, keys.OriginBackfill, row.Origin)

	require.Equal(t, ports.Admitted, got[1].Outcome, "%v", got[1].Reason)
	require.Equal(t, "acct_c1", got[1].Key.Account)

	require.Equal(t, ports.Rejected, got[2].Outcome)
	require.ErrorContains(t, got[2].Reason, "the event names account acct_c2, the pass lists acct_c1")
	_, err = inbox.GetInboxEvent(ctx, st.Pool, keys.Event{Provider: "stripe", Account: "acct_c2", Environment: "live", EventID: "evt_other"})
	require.ErrorIs(t, err, fault.ErrNotFound)
}
