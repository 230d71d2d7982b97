// Package standard is the Standard Webhooks provider (standardwebhooks.com):
// webhook-id, webhook-timestamp and webhook-signature checked with the
// standard-webhooks Go library; the event type, resource and source account
// are read at the endpoint's configured JSON paths. It has no API client.
package standard

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is Standard Webhooks.
type Provider struct{}

var (
	_ providers.Provider = Provider{}
	_ providers.Signer   = Provider{}
)

// Name is "standard".
func (Provider) Name() string { return keys.ProviderStandard }

// Verifier prepares one library verifier per secret (nil for a secret that
// does not decode: it matches nothing).
func (Provider) Verifier(secrets []hookintype.Secret) providers.Verifier {
	v := verifier{secrets: secrets}
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s.Value)
		if err != nil {
			wh = nil
		}
		v.hooks = append(v.hooks, wh)
	}
	return v
}

type verifier struct {
	secrets []hookintype.Secret
	hooks   []*standardwebhooks.Webhook
}

// Verify uses the standard-webhooks library. Its own tolerance is fixed at
// 5 minutes, so the timestamp is checked here against ours and the
// signature by the library. Every space-separated v1 signature is tried
// (senders sign with old and new secret while rotating).
func (v verifier) Verify(h http.Header, body []byte, tolerance time.Duration, now time.Time) (providers.Verified, error) {
	ts := h.Get(standardwebhooks.HeaderWebhookTimestamp)
	if h.Get(standardwebhooks.HeaderWebhookID) == "" || ts == "" || h.Get(standardwebhooks.HeaderWebhookSignature) == "" {
		return providers.Verified{}, providers.Unauthenticatedf("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return providers.Verified{}, providers.Unauthenticatedf("webhook-timestamp is not a unix time")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return providers.Verified{}, providers.Unauthenticatedf("webhook-timestamp outside tolerance (%s)", d.Round(time.Second))
	}
	last := errors.New("no usable secret")
	for i, s := range v.secrets {
		wh := v.hooks[i]
		if wh == nil {
			continue
		}
		if err := wh.VerifyIgnoringTimestamp(body, h); err == nil {
			return providers.Verified{SecretID: s.ID, Payload: body}, nil
		} else {
			last = err
		}
	}
	return providers.Verified{}, providers.Unauthenticatedf("standard webhooks: %s", last.Error())
}

// Signature is the webhook-signature header of message id with body at
// time at: one space-separated v1,<base64> per secret (a sender signs with
// the old and the new secret while it rotates), each made by the
// standard-webhooks library.
func Signature(id string, body []byte, at time.Time, secrets ...string) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, sec := range secrets {
		wh, err := standardwebhooks.NewWebhook(sec)
		if err != nil {
			return "", fmt.Errorf("standard webhooks secret: %w", err)
		}
		sig, err := wh.Sign(id, at, body)
		if err != nil {
			return "", fmt.Errorf("sign %s: %w", id, err)
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}

// Sign sets webhook-timestamp and webhook-signature for body, signed with
// secret at time at. The message id is signed too, so h must already carry
// the delivery's webhook-id.
func (Provider) Sign(secret string, h http.Header, body []byte, at time.Time) error {
	id := h.Get(standardwebhooks.HeaderWebhookID)
	if id == "" {
		return errors.New("a Standard Webhooks delivery needs its webhook-id header")
	}
	sig, err := Signature(id, body, at, secret)
	if err != nil {
		return err
	}
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return nil
}

// Normalize reads a delivery: webhook-id is the event id; type, resource and account come
// from the endpoint's configured JSON paths.
func (Provider) Normalize(s hookintype.EndpointSettings, h http.Header, doc gjson.Result) (providers.Normalized, error) {
	var n providers.Normalized
	var err error
	n.EventID = h.Get("webhook-id")
	if n.EventType, err = providers.RequireString(doc, orDefault(s.TypePath, "type")); err != nil {
		return n, err
	}
	if s.AccountPath != "" {
		if n.Account, err = providers.RequireString(doc, s.AccountPath); err != nil {
			return n, err
		}
	}
	n.ResourceID = doc.Get(orDefault(s.ResourcePath, "data.id")).String()
	n.ResourceKind = s.ResourceKind
	if n.ResourceKind == "" {
		n.ResourceKind, _, _ = strings.Cut(n.EventType, ".")
	}
	if v := doc.Get("timestamp"); v.Type == gjson.String {
		if t, err := time.Parse(time.RFC3339Nano, v.Str); err == nil {
			n.OccurredAt = &t
		}
	}
	return n, nil
}

// KeepHeader keeps webhook-id and webhook-timestamp (never the signature).
func (Provider) KeepHeader(name string) bool {
	return name == "webhook-id" || name == "webhook-timestamp"
}

// CheckSecret requires the library's format, whsec_ + base64, of at least
// 24 random bytes (the specification's minimum).
func (Provider) CheckSecret(secret string) error {
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		return fmt.Errorf("standard webhooks secret must be whsec_<base64>: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("standard webhooks secret must be whsec_<base64>: %w", err)
	}
	distinct := map[byte]bool{}
	for _, b := range key {
		distinct[b] = true
	}
	if len(key) < providers.MinSecretBytes || len(distinct) < 8 {
		return fmt.Errorf("standard webhooks secret holds %d bytes (%d distinct): use at least %d random bytes",
			len(key), len(distinct), providers.MinSecretBytes)
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
