package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// SlackSender posts a message to a Slack-compatible incoming webhook (Slack,
// Mattermost, Rocket.Chat, Discord's /slack endpoint…): a JSON body
// {"text": …}. The URL is its own credential (the token is its path): it
// goes through Guard, redirects are never followed, and errors name only
// its origin.
//
// Incoming webhooks take no idempotency key, so Idempotent is false: a
// send whose outcome is unknown follows its class's uncertain-outcome
// policy (repeat and accept a duplicate, or hold for review).
type SlackSender struct {
	URL   string
	Guard Guard
	// Client replaces the guarded client (the test of a rule records the
	// answer through its own).
	Client *http.Client
}

// Idempotent is false: an incoming webhook cannot dedupe.
func (s *SlackSender) Idempotent() bool { return false }

// Send posts m.Text.
func (s *SlackSender) Send(ctx context.Context, m Message) (string, error) {
	op := "slack webhook " + origin(s.URL)
	body, err := json.Marshal(map[string]string{"text": m.Text})
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: errors.New("invalid webhook URL")}
	}
	req.Header.Set("Content-Type", "application/json")
	if err := post(s.Client, s.Guard, op, req); err != nil {
		return "", err
	}
	return "", nil
}
