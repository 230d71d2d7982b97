package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v72/github"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// errUnauthenticated is any failed signature check; the detail is logged,
// the sender only learns 401.
type errUnauthenticated struct{ reason string }

func (e errUnauthenticated) Error() string { return "unauthenticated: " + e.reason }

// verified is what a successful check yields.
type verified struct {
	secretID int64
	// payload is the JSON to normalize: the body itself, except GitHub's
	// form-encoded deliveries whose JSON is the "payload" field.
	payload []byte
}

// verify authenticates body against the endpoint's secrets with the
// provider's own scheme, using the official verifier where one exists.
func verify(ep *cachedEndpoint, h http.Header, body []byte, tolerance time.Duration, now time.Time) (verified, error) {
	if len(ep.Secrets) == 0 {
		return verified{}, errUnauthenticated{"endpoint has no secret"}
	}
	switch ep.Provider {
	case keys.ProviderStripe:
		return verifyStripe(ep, h, body, tolerance, now)
	case keys.ProviderGitHub:
		return verifyGitHub(ep, h, body)
	case keys.ProviderStandard:
		return verifyStandard(ep, h, body, tolerance, now)
	case keys.ProviderShopify:
		return verifyShopify(ep, h, body)
	}
	return verified{}, fmt.Errorf("provider %q has no verifier", ep.Provider)
}

// verifyStripe uses stripe-go's webhook package: Stripe-Signature
// t=…,v1=…; the timestamp is inside the signed material. stripe-go rejects
// timestamps too old; one too far in the future is rejected here, so the
// tolerance holds both ways as for Standard Webhooks.
func verifyStripe(ep *cachedEndpoint, h http.Header, body []byte, tolerance time.Duration, now time.Time) (verified, error) {
	sig := h.Get("Stripe-Signature")
	if sig == "" {
		return verified{}, errUnauthenticated{"missing Stripe-Signature"}
	}
	for _, part := range strings.Split(sig, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			if ts, err := strconv.ParseInt(v, 10, 64); err == nil && time.Unix(ts, 0).Sub(now) > tolerance {
				return verified{}, errUnauthenticated{"stripe: timestamp is in the future beyond the tolerance"}
			}
		}
	}
	var last error
	for _, s := range ep.Secrets {
		err := webhook.ValidatePayloadWithTolerance(body, sig, s.Value, tolerance)
		if err == nil {
			return verified{secretID: s.ID, payload: body}, nil
		}
		last = err
		if errors.Is(err, webhook.ErrInvalidHeader) || errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrTooOld) {
			break // the same for every secret
		}
	}
	return verified{}, errUnauthenticated{"stripe: " + last.Error()}
}

// verifyGitHub uses go-github's ValidatePayloadFromBody with the SHA-256
// signature only (X-Hub-Signature-256); SHA-1 alone is refused.
func verifyGitHub(ep *cachedEndpoint, h http.Header, body []byte) (verified, error) {
	sig := h.Get(github.SHA256SignatureHeader)
	if sig == "" {
		return verified{}, errUnauthenticated{"missing " + github.SHA256SignatureHeader}
	}
	if !strings.HasPrefix(sig, "sha256=") {
		return verified{}, errUnauthenticated{"signature is not sha256"}
	}
	var last error
	for _, s := range ep.Secrets {
		payload, err := github.ValidatePayloadFromBody(h.Get("Content-Type"), bytes.NewReader(body), sig, []byte(s.Value))
		if err == nil {
			return verified{secretID: s.ID, payload: payload}, nil
		}
		last = err
	}
	return verified{}, errUnauthenticated{"github: " + last.Error()}
}

// verifyStandard uses the standard-webhooks library. Its own tolerance is
// fixed at 5 minutes, so the timestamp is checked here against ours and the
// signature by the library. Every space-separated v1 signature is tried
// (senders sign with old and new secret while rotating).
func verifyStandard(ep *cachedEndpoint, h http.Header, body []byte, tolerance time.Duration, now time.Time) (verified, error) {
	ts := h.Get(standardwebhooks.HeaderWebhookTimestamp)
	if h.Get(standardwebhooks.HeaderWebhookID) == "" || ts == "" || h.Get(standardwebhooks.HeaderWebhookSignature) == "" {
		return verified{}, errUnauthenticated{"missing webhook-id, webhook-timestamp or webhook-signature"}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return verified{}, errUnauthenticated{"webhook-timestamp is not a unix time"}
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return verified{}, errUnauthenticated{fmt.Sprintf("webhook-timestamp outside tolerance (%s)", d.Round(time.Second))}
	}
	last := errors.New("no usable secret")
	for i, s := range ep.Secrets {
		wh := ep.standard[i]
		if wh == nil {
			continue
		}
		if err := wh.VerifyIgnoringTimestamp(body, h); err == nil {
			return verified{secretID: s.ID, payload: body}, nil
		} else {
			last = err
		}
	}
	return verified{}, errUnauthenticated{"standard webhooks: " + last.Error()}
}

// verifyShopify checks X-Shopify-Hmac-Sha256, the base64 HMAC-SHA256 of the
// body. Shopify publishes no Go verifier; the comparison is constant-time.
func verifyShopify(ep *cachedEndpoint, h http.Header, body []byte) (verified, error) {
	got, err := base64.StdEncoding.DecodeString(h.Get("X-Shopify-Hmac-Sha256"))
	if err != nil || len(got) != sha256.Size {
		return verified{}, errUnauthenticated{"missing or malformed X-Shopify-Hmac-Sha256"}
	}
	for _, s := range ep.Secrets {
		mac := hmac.New(sha256.New, []byte(s.Value))
		mac.Write(body)
		if hmac.Equal(mac.Sum(nil), got) {
			return verified{secretID: s.ID, payload: body}, nil
		}
	}
	return verified{}, errUnauthenticated{"shopify: no secret matches"}
}

// ValidateSecret checks a secret is usable for provider before it is
// registered (Standard Webhooks secrets are whsec_ + base64).
func ValidateSecret(provider, secret string) error {
	if strings.TrimSpace(secret) == "" {
		return errors.New("secret is empty")
	}
	if provider == keys.ProviderStandard {
		if _, err := standardwebhooks.NewWebhook(secret); err != nil {
			return fmt.Errorf("standard webhooks secret must be whsec_<base64>: %w", err)
		}
	}
	return nil
}
