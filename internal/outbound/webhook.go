package outbound

import (
	"bytes"
	"context"
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
type WebhookSender struct {
	URL    string
	Secret string
	Client *http.Client
}

// Idempotent is true: Standard Webhooks receivers dedupe on webhook-id.
func (s *WebhookSender) Idempotent() bool { return true }

// WebhookID is the webhook-id of an operation key.
func WebhookID(key string) string { return "msg_" + StableID(key) }

// Send posts m.Body.
func (s *WebhookSender) Send(ctx context.Context, m Message) (string, error) {
	op := "webhook " + s.URL
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
		return "", &Error{Op: op, Permanent: true, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := client(s.Client).Do(req)
	if err != nil {
		return "", &Error{Op: op, Definite: notSent(err), Err: err}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err := statusError(op, resp.StatusCode, data); err != nil {
		return "", err
	}
	return id, nil
}
