// Package outbound sends hookinbox's outbound effects: email through an HTTP
// email API (Idempotency-Key) or SMTP (a stable Message-ID), and team alerts
// as Standard Webhooks-signed HTTP posts. Every sender keys its request by
// the outbox operation key, and every failure says whether the destination
// may have acted on it: Definite (it did not; send again freely) or
// uncertain (it may have; the uncertain-outcome policy decides).
package outbound

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Message is one outbound effect.
type Message struct {
	// Key is the outbox operation key: the idempotency key, the source of
	// the stable Message-ID and webhook-id.
	Key     string
	To      string
	Subject string
	Text    string
	// Body is the JSON body of a webhook.
	Body []byte
}

// Sender delivers messages to one kind of destination.
type Sender interface {
	// Send delivers m and returns the destination's id for it, if any.
	Send(ctx context.Context, m Message) (remoteID string, err error)
	// Idempotent reports whether the destination dedupes on the key, so a
	// repeat of an uncertain attempt cannot produce a duplicate.
	Idempotent() bool
}

// Finder is a Sender whose destination can be asked whether a message was
// delivered (the "query the destination" policy).
type Finder interface {
	Find(ctx context.Context, key string) (found bool, err error)
}

// Error is a failed send.
type Error struct {
	Op string
	// Definite: the destination certainly did not act (connection refused,
	// rejected before acceptance, a 4xx). Otherwise the outcome is unknown.
	Definite bool
	// Permanent: sending again will not help (a 4xx other than 408/429).
	Permanent bool
	Err       error
}

func (e *Error) Error() string {
	kind := "outcome unknown"
	switch {
	case e.Permanent:
		kind = "rejected"
	case e.Definite:
		kind = "not delivered"
	}
	return fmt.Sprintf("%s: %s: %v", e.Op, kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsDefinite reports a failure after which the destination certainly did
// not act on the message.
func IsDefinite(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Definite || e.Permanent)
}

// IsPermanent reports a failure that sending again will not fix.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// StableID derives a short, stable identifier from an operation key (for a
// Message-ID or a webhook-id): the same key always gives the same id.
func StableID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}
