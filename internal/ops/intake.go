package ops

import (
	"context"
	"errors"

	"github.com/hookinbox/hookinbox/internal/admission"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/providers"
)

// The intake's own code that operator acts reuse: re-admission goes through
// the one admission path, exactly as a delivery would, and secrets are
// checked by the provider registry's rules.

func readmit(ctx context.Context, st, payloads *store.Store, rt routes.Router, id int64, by, reason string) (admission.ReadmitResult, error) {
	return admission.ReadmitFrom(ctx, st, payloads, rt, id, by, reason)
}

func isCannotReadmit(err error) bool { return errors.Is(err, admission.ErrCannotReadmit) }

func validateSecret(provider, secret string) error { return providers.ValidateSecret(provider, secret) }
