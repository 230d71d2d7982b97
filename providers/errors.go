package providers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox/hookintype"
)

// Sentinels for errors.Is, hookinbox's error kinds (defined once, in
// hookintype). Every *Error matches exactly one of them.
var (
	// ErrNotFound: the provider says the resource does not exist (404). It is
	// not a state: a 404 never means deleted or cancelled.
	ErrNotFound = hookintype.ErrNotFound
	// ErrPermanent: asking again will not help (400, 401, 403, other 4xx,
	// an answer that cannot be read).
	ErrPermanent = hookintype.ErrPermanent
	// ErrRetryable: try again later (5xx, 408, 429, timeouts, connection errors).
	ErrRetryable = hookintype.ErrRetryable
)

// Error is a failed provider call.
type Error struct {
	Op         string // e.g. "fetch invoice in_123"
	StatusCode int    // 0 when no HTTP answer came
	Code       string // the provider's error code, e.g. resource_missing, rate_limit
	Message    string
	// RetryAfter is the server's Retry-After, when it gave one.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Kind is ErrNotFound, ErrPermanent or ErrRetryable (KindForStatus
	// classifies an HTTP status).
	Kind error
	// Err is the underlying error, if any.
	Err error
}

// Error says what failed, how it is classified and why.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	s := fmt.Sprintf("%s: %s", e.Op, e.Kind.Error())
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (HTTP %d", e.StatusCode)
		if e.Code != "" {
			s += " " + e.Code
		}
		s += ")"
	}
	if e.HasRetryAfter {
		s += fmt.Sprintf(" retry after %s", e.RetryAfter)
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// RateLimitWait is the wait until the provider's rate limit resets, when e
// is a rate limit with a known reset: retryable, a 429 or the provider's
// rate-limit code (GitHub answers its primary limit with a 403), and a
// Retry-After or reset time. The worker leaves such an event pending until
// then without counting an attempt.
func (e *Error) RateLimitWait() (time.Duration, bool) {
	limited := e.StatusCode == http.StatusTooManyRequests || e.Code == "rate_limit" || e.Code == "secondary_rate_limit"
	if !limited || !e.HasRetryAfter || !errors.Is(e.Kind, ErrRetryable) {
		return 0, false
	}
	return e.RetryAfter, true
}

// Unwrap exposes the kind sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// IsNotFound reports a 404.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsRetryable reports an error worth retrying later.
func IsRetryable(err error) bool { return errors.Is(err, ErrRetryable) }

// IsPermanent reports an error that retrying will not fix.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// RetryAfter returns the server's Retry-After, when it sent one (any error
// in err's chain with a RetryAfterHint, as the worker reads it).
func RetryAfter(err error) (time.Duration, bool) {
	var r interface{ RetryAfterHint() (time.Duration, bool) }
	if errors.As(err, &r) {
		return r.RetryAfterHint()
	}
	return 0, false
}

// RetryAfterHint is the server's Retry-After, when it sent one.
func (e *Error) RetryAfterHint() (time.Duration, bool) { return e.RetryAfter, e.HasRetryAfter }

// KindForStatus classifies an HTTP status: 404 NotFound; 408, 429 and 5xx
// Retryable; every other status Permanent.
func KindForStatus(status int) error {
	switch {
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status >= 500:
		return ErrRetryable
	default:
		return ErrPermanent
	}
}

// ParseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Malformed is the Permanent error of an answer that cannot be read.
func Malformed(op, msg string) error {
	return &Error{Op: op, Message: "malformed answer: " + msg, Kind: ErrPermanent}
}
