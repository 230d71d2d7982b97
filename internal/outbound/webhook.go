package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// WebhookSender posts a team alert to an HTTP endpoint signed with Standard
// Webhooks, so the team's endpoint can verify it with any Standard Webhooks
// library. The webhook-id is stable per operation key: receivers dedupe on
// it (the spec asks them to), so repeating an uncertain attempt is safe.
//
// The URL is a team's own, so the connection goes through Guard: private and
// loopback addresses are refused unless the guard allows them, and errors
// name only the destination's origin, never the URL's path or query.
type WebhookSender struct {
	URL    string
	Secret string
	Guard  Guard
	// Client replaces the guarded client (tests).
	Client *http.Client
}

// Idempotent is true: Standard Webhooks receivers dedupe on webhook-id.
func (s *WebhookSender) Idempotent() bool { return true }

// WebhookID is the webhook-id of an operation key.
func WebhookID(key string) string { return "msg_" + StableID(key) }

// Send posts m.Body.
func (s *WebhookSender) Send(ctx context.Context, m Message) (string, error) {
	op := "webhook " + origin(s.URL)
	wh, err := standardwebhooks.NewWebhook(s.Secret)
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: fmt.Errorf("destination secret: %w", err)}
	}
	id, now := WebhookID(m.Key), time.Now()
	sig, err := wh.Sign(id, now, m.Body)
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(m.Body))
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: errors.New("invalid destination URL")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	if err := post(s.Client, s.Guard, op, req); err != nil {
		return "", err
	}
	return id, nil
}

// post sends req with hc (nil: g's guarded client, 30 s) and classifies
// the answer as the senders of this file and slack.go do: a refused address
// is permanent, a transport error definite only when nothing was sent, and
// the status by statusError. The answer's body is drained (4 KiB at most).
func post(hc *http.Client, g Guard, op string, req *http.Request) error {
	if hc == nil {
		hc = g.Client(30 * time.Second)
	}
	resp, err := hc.Do(req)
	if errors.Is(err, ErrForbiddenAddress) {
		return &Error{Op: op, Permanent: true, Err: transportError(err)}
	}
	if err != nil {
		return &Error{Op: op, Definite: notSent(err), Err: transportError(err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return statusError(op, resp.StatusCode)
}
