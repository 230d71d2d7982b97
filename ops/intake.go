package ops

import (
	"context"
	"errors"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/webhook"
)

// The intake's own code that operator acts reuse: re-admission derives an
// event exactly as a delivery would, and secrets are checked by the
// provider's rules. Kept in this one file because the intake's packages
// are being reorganized (webhook → providers + admission).

func readmit(ctx context.Context, st *store.Store, id int64, by, reason string) (webhook.ReadmitResult, error) {
	return webhook.Readmit(ctx, st, id, by, reason)
}

func isCannotReadmit(err error) bool { return errors.Is(err, webhook.ErrCannotReadmit) }

func validateSecret(provider, secret string) error { return webhook.ValidateSecret(provider, secret) }
