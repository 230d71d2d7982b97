// Package slack is a provider of the team's own: the Slack Events API,
// registered with hookinbox.WithProvider. It imports only hookinbox's
// public API (providers, hookintype).
//
// Slack signs every request it sends: X-Slack-Signature is "v0=" and the
// hex HMAC-SHA256 of "v0:{X-Slack-Request-Timestamp}:{body}" under the
// app's signing secret, and a request whose timestamp is more than the
// intake's tolerance (HOOKINBOX_SIGNATURE_TOLERANCE, Slack's own five
// minutes by default) from now is refused. The url_verification handshake
// Slack sends when the request URL is set is answered with its challenge
// and stored as nothing; each event_callback is one event, keyed by its
// event_id, its tenant the team_id, its resource the channel it happened
// in.
package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
)

// Name is the provider's name in endpoints and event keys.
const Name = "slack"

// The headers Slack signs a request with.
const (
	HeaderSignature = "X-Slack-Signature"
	HeaderTimestamp = "X-Slack-Request-Timestamp"
)

// ResourceKind is the kind of every event's resource: the channel (a
// conversation: public, private, a DM) the event happened in. Events of one
// channel run one at a time.
const ResourceKind = "channel"

// Provider is Slack's Events API. It is stateless.
type Provider struct{}

var (
	_ providers.Provider = Provider{}
	_ providers.Signer   = Provider{}
)

// Name is "slack".
func (Provider) Name() string { return Name }

// Verifier checks deliveries against the endpoint's active signing
// secrets (two while one is rotated).
func (Provider) Verifier(secrets []hookintype.Secret) providers.Verifier { return verifier(secrets) }

type verifier []hookintype.Secret

// Verify checks the v0 signature on the raw body, at the intake's clock
// (now) and tolerance: slack-go's slack.NewSecretsVerifier reads the wall
// clock with a fixed five-minute window, which neither the intake's
// tolerance, a test's clock nor Slack's own published example (2018) can
// pass through, so the scheme is written here, with a constant-time
// comparison; the tests check it against slack-go's verifier and Slack's
// example.
func (v verifier) Verify(h http.Header, body []byte, tolerance time.Duration, now time.Time) (providers.Verified, error) {
	sig, ok := strings.CutPrefix(h.Get(HeaderSignature), "v0=")
	if !ok {
		return providers.Verified{}, providers.Unauthenticatedf("missing %s v0 signature", HeaderSignature)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return providers.Verified{}, providers.Unauthenticatedf("malformed %s", HeaderSignature)
	}
	ts := h.Get(HeaderTimestamp)
	at, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return providers.Verified{}, providers.Unauthenticatedf("missing or malformed %s", HeaderTimestamp)
	}
	if skew := now.Sub(time.Unix(at, 0)).Abs(); skew > tolerance {
		return providers.Verified{}, providers.Unauthenticatedf("timestamp %s is %s from now, more than %s", ts, skew.Round(time.Second), tolerance)
	}
	for _, s := range v {
		if hmac.Equal(mac(s.Value, ts, body), got) {
			return providers.Verified{SecretID: s.ID, Payload: body}, nil
		}
	}
	return providers.Verified{}, providers.Unauthenticatedf("no signing secret matches")
}

// mac is the v0 HMAC of body at timestamp ts.
func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// Sign signs body as Slack does at time at: hookintest.Sign delivers to a
// Slack endpoint through it.
func (Provider) Sign(secret string, h http.Header, body []byte, at time.Time) error {
	if secret == "" {
		return errors.New("slack: no signing secret")
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, "v0="+hex.EncodeToString(mac(secret, ts, body)))
	return nil
}

// Normalize reads a verified request: the handshake, answered and stored
// as nothing; an event_callback, keyed by its event_id in its team; an
// app_rate_limited notice (Slack dropped events: recorded, per minute, so
// an operator sees it).
func (Provider) Normalize(_ hookintype.EndpointSettings, _ http.Header, doc gjson.Result) (providers.Normalized, error) {
	typ, err := providers.RequireString(doc, "type")
	if err != nil {
		return providers.Normalized{}, err
	}
	switch typ {
	case "url_verification":
		challenge, err := providers.RequireString(doc, "challenge")
		if err != nil {
			return providers.Normalized{}, err
		}
		return providers.Normalized{Reply: providers.ReplyText(challenge)}, nil
	case "event_callback":
		return event(doc)
	case "app_rate_limited":
		n := providers.Normalized{EventType: typ, ResourceKind: "app"}
		if n.Account, err = providers.RequireString(doc, "team_id"); err != nil {
			return n, err
		}
		minute, err := providers.RequireString(doc, "minute_rate_limited")
		if err != nil {
			return n, err
		}
		n.EventID = "app_rate_limited:" + minute
		n.ResourceID = doc.Get("api_app_id").String()
		return n, nil
	}
	return providers.Normalized{}, providers.Malformedf("unknown Events API request type %q", typ)
}

// event reads an event_callback: the envelope's event_id, team_id and
// event_time, the inner event's type and channel.
func event(doc gjson.Result) (providers.Normalized, error) {
	n := providers.Normalized{ResourceKind: ResourceKind}
	var err error
	if n.EventID, err = providers.RequireString(doc, "event_id"); err != nil {
		return n, err
	}
	if n.Account, err = providers.RequireString(doc, "team_id"); err != nil {
		return n, err
	}
	if n.EventType, err = providers.RequireString(doc, "event.type"); err != nil {
		return n, err
	}
	n.ResourceID = Channel(doc.Get("event"))
	if t := doc.Get("event_time"); t.Type == gjson.Number {
		at := time.Unix(t.Int(), 0).UTC()
		n.OccurredAt = &at
	}
	return n, nil
}

// Channel is the channel an inner event happened in: its "channel" (an
// id, or a channel object's id), else its item's (a reaction's message).
// "" for the events of no channel (team_join, app_uninstalled, …): they
// can be recorded, not handled.
func Channel(ev gjson.Result) string {
	for _, path := range []string{"channel", "channel.id", "item.channel"} {
		if v := ev.Get(path); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	return ""
}

// KeepHeader keeps what says how Slack retried a quarantined delivery;
// never the signature.
func (Provider) KeepHeader(name string) bool {
	switch name {
	case "x-slack-request-timestamp", "x-slack-retry-num", "x-slack-retry-reason":
		return true
	}
	return false
}

// CheckSecret takes a Slack signing secret (32 hex characters of 16
// random bytes, as the app's Basic Information page shows it) or any
// secret of at least 24 random bytes.
func (Provider) CheckSecret(secret string) error {
	if _, err := hex.DecodeString(secret); err == nil && len(secret) == 32 {
		distinct := map[rune]bool{}
		for _, r := range strings.ToLower(secret) {
			distinct[r] = true
		}
		if len(distinct) >= 10 {
			return nil
		}
		return errors.New("a Slack signing secret of so few distinct characters is not random")
	}
	if err := providers.CheckRandom(secret); err != nil {
		return fmt.Errorf("not a Slack signing secret (32 hex characters): %w", err)
	}
	return nil
}
