package hookinbox

import (
	"github.com/hookinbox/hookinbox/internal/fault"
)

// ErrNotFound matches an error saying that what was asked about does not
// exist: a row, an endpoint, a provider's 404. A provider's 404 is never a
// state (never "deleted"): it is retried like any error unless the handler
// wraps it Permanent.
var ErrNotFound = fault.ErrNotFound

// Permanent wraps err so the event fails at once (status failed, with err as
// its last error) instead of being retried: a payload that can never be
// applied, a provider answer that will not change. The row stays visible
// and replayable. Permanent(nil) is nil.
func Permanent(err error) error { return fault.Permanent(err) }

// IsPermanent reports whether err was wrapped by Permanent, or is a
// provider error that retrying will not fix.
func IsPermanent(err error) bool { return fault.IsPermanent(err) }

// Wait says the event must wait for another fact (a credit note for the
// grant of its invoice): nothing failed, so its row stays pending, due again
// after a growing backoff, and the resource's next events run meanwhile. The
// fact's own handler makes it due at once with Tx.Wake. An event still
// waiting past its handler's WaitLimit is retried as an error, and ends
// exhausted if the fact never comes. reason is recorded as the row's last
// error; cause may be nil.
func Wait(reason string, cause error) error { return fault.Wait(reason, cause) }
