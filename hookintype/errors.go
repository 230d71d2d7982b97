package hookintype

import "errors"

// The error kinds every layer of hookinbox classifies with errors.Is, so a
// provider's answer, a store lookup and a handler's verdict mean the same
// thing everywhere (providers and the module root re-export them). An error
// matches at most one of ErrPermanent and ErrRetryable; ErrNotFound is
// neither (a provider's 404 may be the provider catching up, so it is
// retried; a caller that knows better wraps it permanent).
var (
	// ErrNotFound: the thing asked about does not exist (a row, an endpoint,
	// a provider's 404). Never a state: a 404 never means deleted.
	ErrNotFound = errors.New("not found")
	// ErrPermanent: asking again will not help (bad input, a 4xx that will
	// not change, an answer that cannot be read).
	ErrPermanent = errors.New("permanent error")
	// ErrRetryable: try again later (5xx, 408, 429, timeouts, connection errors).
	ErrRetryable = errors.New("retryable error")
)
