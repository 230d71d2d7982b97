// Package storetest gives the store's tests a migrated database with one
// Stripe test endpoint ("ep", account acct_1 linked to ws_1) and inbox rows
// on it. Tests only.
package storetest

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// Setup returns a fresh store with endpoint "ep" (stripe, test) whose
// account acct_1 is linked to workspace ws_1.
func Setup(t *testing.T) (*store.Store, context.Context) {
	t.Helper()
	s := testenv.Store(t)
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: "ep", Provider: "stripe", Environment: "test", Secrets: []string{"whsec_a"}}))
	require.NoError(t, endpoints.LinkAccount(ctx, s, "ep", "acct_1", "ws_1"))
	return s, ctx
}

// Event is an invoice.paid inbox row of Setup's endpoint with event id id
// and body body (hashed as the intake hashes it).
func Event(id, body string) *inbox.InboxEvent {
	h := sha256.Sum256([]byte(body))
	return &inbox.InboxEvent{
		Key:          keys.Event{Provider: "stripe", Account: "acct_1", Environment: "test", EventID: id},
		EndpointSlug: "ep", WorkspaceID: "ws_1", EventType: "invoice.paid",
		ResourceKind: "invoice", ResourceID: "in_1", Payload: []byte(body), BodySHA256: h[:],
	}
}
