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
	op := "email API " + strings.TrimRight(m.BaseURL, "/") + "/v1/emails"
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
		return "", &Error{Op: op, Definite: notSent(err), Err: err}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := statusError(op, resp.StatusCode, data); err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &out)
	return out.ID, nil
}

// statusError classifies an HTTP answer: 2xx nil; 408, 425, 429 definite
// (the request was not processed); other 4xx permanent; 5xx uncertain (the
// server may have acted before failing).
func statusError(op string, status int, body []byte) error {
	if status >= 200 && status < 300 {
		return nil
	}
	err := fmt.Errorf("HTTP %d: %s", status, strings.TrimSpace(string(body)))
	switch {
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

func client(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: 30 * time.Second}
}
