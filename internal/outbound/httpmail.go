package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// HTTPMailer posts email to an HTTP email API (POST {BaseURL}/v1/emails,
// JSON from/to/subject/text) with an Idempotency-Key header equal to the
// operation key, the shape of common transactional email APIs.
type HTTPMailer struct {
	BaseURL string
	APIKey  string
	From    string
	// Dedupes says the API honours Idempotency-Key (default true in config).
	Dedupes bool
	Client  *http.Client
}

// Idempotent reports whether the API dedupes on the key.
func (m *HTTPMailer) Idempotent() bool { return m.Dedupes }

// Send posts the email.
func (m *HTTPMailer) Send(ctx context.Context, msg Message) (string, error) {
	op := "email API " + origin(m.BaseURL)
	body, err := json.Marshal(map[string]string{"from": m.From, "to": msg.To, "subject": msg.Subject, "text": msg.Text})
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(m.BaseURL, "/")+"/v1/emails", bytes.NewReader(body))
	if err != nil {
		return "", &Error{Op: op, Permanent: true, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", msg.Key)
	if m.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.APIKey)
	}
	resp, err := client(m.Client).Do(req)
	if err != nil {
		return "", &Error{Op: op, Definite: notSent(err), Err: transportError(err)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := statusError(op, resp.StatusCode); err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &out)
	return out.ID, nil
}

// statusError classifies an HTTP answer: 2xx nil; 408, 425, 429 definite
// (the request was not processed); a 3xx permanent (redirects are not
// followed); other 4xx permanent; 5xx uncertain (the server may have acted
// before failing). The answer's body is never part of the error: errors
// are stored on the outbox row and in Temporal histories, and a
// destination's body can echo tokens or internal details.
func statusError(op string, status int) error {
	if status >= 200 && status < 300 {
		return nil
	}
	err := fmt.Errorf("HTTP %d", status)
	switch {
	case status >= 300 && status < 400:
		return &Error{Op: op, Permanent: true, Err: fmt.Errorf("HTTP %d: redirect not followed", status)}
	case status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests:
		return &Error{Op: op, Definite: true, Err: err}
	case status >= 400 && status < 500:
		return &Error{Op: op, Permanent: true, Err: err}
	default:
		return &Error{Op: op, Err: err}
	}
}

// notSent reports a transport error raised before the request could reach
// the server (dial failures), after which it certainly did not act.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// client is c, or a client for the operator's own configured services (the
// email API, Mailpit's lookup): no redirects followed, no guard on the
// address, which the operator chose.
func client(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return Guard{AllowPrivate: true}.Client(30 * time.Second)
}
