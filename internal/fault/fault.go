// Package fault defines hookinbox's error kinds once: not found, permanent
// (asking again will not help), retryable, and unavailable (the database is
// away: the work waits for it without spending its budget). Every layer
// classifies with these sentinels and errors.Is, so a provider's answer, a
// store lookup and a handler's verdict mean the same thing everywhere. The
// public packages (the module root, providers) re-export them; the three a
// provider's answer can be are defined in hookintype, so that providers, a
// public package, needs nothing internal. It imports the standard library
// and hookintype only.
package fault

import (
	"errors"
	"time"

	"github.com/hookinbox/hookinbox/hookintype"
)

// The kinds. An error matches at most one of ErrPermanent and ErrRetryable;
// ErrNotFound is neither (a provider's 404 may be the provider catching up,
// so it is retried; a caller that knows better wraps it Permanent).
var (
	// ErrNotFound: the thing asked about does not exist (a row, an endpoint,
	// a provider's 404). Never a state: a 404 never means deleted.
	ErrNotFound = hookintype.ErrNotFound
	// ErrPermanent: asking again will not help (bad input, a 4xx that will
	// not change, an answer that cannot be read).
	ErrPermanent = hookintype.ErrPermanent
	// ErrRetryable: try again later (5xx, 408, 429, timeouts, connection errors).
	ErrRetryable = hookintype.ErrRetryable
	// ErrUnavailable: the database could not be reached; the work waits
	// for it instead of spending its retry budget.
	ErrUnavailable = errors.New("database unavailable")
)

// kindError wraps err so that errors.Is also matches kind.
type kindError struct {
	kind error
	err  error
}

func (k kindError) Error() string   { return k.err.Error() }
func (k kindError) Unwrap() []error { return []error{k.kind, k.err} }

// Permanent wraps err so that it matches ErrPermanent: the work fails at
// once instead of retrying. Permanent(nil) is nil.
func Permanent(err error) error { return wrap(ErrPermanent, err) }

// Unavailable wraps err so that it matches ErrUnavailable. Unavailable(nil)
// is nil.
func Unavailable(err error) error { return wrap(ErrUnavailable, err) }

func wrap(kind, err error) error {
	if err == nil || errors.Is(err, kind) {
		return err
	}
	return kindError{kind: kind, err: err}
}

// IsNotFound reports whether err matches ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPermanent reports whether err matches ErrPermanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// IsRetryable reports whether err matches ErrRetryable.
func IsRetryable(err error) bool { return errors.Is(err, ErrRetryable) }

// IsUnavailable reports whether err matches ErrUnavailable.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// WaitError says an event waits for another fact (a credit note for its
// invoice's grant): nothing failed, so its row stays pending, due again
// after a backoff, without counting against its retry budget until it has
// waited longer than its handler's wait limit.
type WaitError struct {
	// Reason is what the event waits for, recorded as the row's last error.
	Reason string
	// Err is the cause, if any.
	Err error
}

func (w *WaitError) Error() string {
	if w.Err == nil {
		return w.Reason
	}
	return w.Reason + ": " + w.Err.Error()
}

func (w *WaitError) Unwrap() error { return w.Err }

// Wait is a *WaitError.
func Wait(reason string, cause error) error { return &WaitError{Reason: reason, Err: cause} }

// AsWait returns err's *WaitError, if it has one.
func AsWait(err error) (*WaitError, bool) {
	var w *WaitError
	ok := errors.As(err, &w)
	return w, ok
}

// retryAfterer is an error that knows when to try again (a provider's or a
// forward route's Retry-After).
type retryAfterer interface {
	RetryAfterHint() (time.Duration, bool)
}

// RetryAfter is the delay err asks for before the next attempt, when it
// carries one.
func RetryAfter(err error) (time.Duration, bool) {
	var r retryAfterer
	if errors.As(err, &r) {
		return r.RetryAfterHint()
	}
	return 0, false
}

// rateLimiter is an error that says a provider's rate limit is spent, and
// when it resets (a provider client's 429, or GitHub's 403 with no
// requests remaining).
type rateLimiter interface {
	RateLimitWait() (time.Duration, bool)
}

// RateLimited is how long err says to wait for a spent rate limit to
// reset, when it is one: nothing failed, and asking before the reset only
// spends the budget again.
func RateLimited(err error) (time.Duration, bool) {
	var r rateLimiter
	if errors.As(err, &r) {
		return r.RateLimitWait()
	}
	return 0, false
}
