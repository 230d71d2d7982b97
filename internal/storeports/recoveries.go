package storeports

import (
	"context"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/passes"
)

// Recoveries implements ports.Recoveries on hook_recoveries, the inbox and
// the quarantine.
type Recoveries struct{ Store *store.Store }

var _ ports.Recoveries = Recoveries{}

// Received reports the delivery ids that reached hookinbox through the
// scope's endpoint (store.ReceivedDeliveries).
func (r Recoveries) Received(ctx context.Context, scope keys.Scope, ids []string) (map[string]bool, error) {
	got, err := passes.ReceivedDeliveries(ctx, r.Store.Pool, scope.Provider, scope.Environment, scope.Endpoint, ids)
	return got, portErr(err)
}

// Claim records that pass acts on a missing delivery (store.ClaimRecovery).
func (r Recoveries) Claim(ctx context.Context, endpoint, guid string, deliveryID int64, pass string) (int, bool, error) {
	n, claimed, err := passes.ClaimRecovery(ctx, r.Store.Pool, endpoint, guid, deliveryID, pass)
	return n, claimed, portErr(err)
}

// Record says how the claiming pass recovered the delivery.
func (r Recoveries) Record(ctx context.Context, endpoint, guid, action string) error {
	return portErr(passes.SetRecoveryAction(ctx, r.Store.Pool, endpoint, guid, action))
}
