// Package github is the GitHub provider: X-Hub-Signature-256 checked by
// go-github's ValidatePayloadFromBody (SHA-1 alone is refused), JSON or
// form-encoded deliveries, X-GitHub-Delivery as the event id, the
// installation (else the organization or owner) as the source account and
// the repository (else the organization) as the resource. Its API client
// reads and replays a hook's delivery log (client.go): GitHub never
// redelivers a failed delivery, so the recovery schedule does.
package github

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy X-Hub-Signature, sent beside the SHA-256 one; never verified
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v72/github"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is GitHub.
type Provider struct{}

var (
	_ providers.Provider  = Provider{}
	_ providers.Unwrapper = Provider{}
	_ providers.Signer    = Provider{}
)

// Name is "github".
func (Provider) Name() string { return keys.ProviderGitHub }

// Verifier checks X-Hub-Signature-256 against secrets.
func (Provider) Verifier(secrets []hookintype.Secret) providers.Verifier { return verifier(secrets) }

type verifier []hookintype.Secret

// Verify uses go-github's ValidatePayloadFromBody with the SHA-256
// signature only (X-Hub-Signature-256); SHA-1 alone is refused. The payload
// is the body, or the "payload" field of a form-encoded delivery.
func (v verifier) Verify(h http.Header, body []byte, _ time.Duration, _ time.Time) (providers.Verified, error) {
	sig := h.Get(github.SHA256SignatureHeader)
	if sig == "" {
		return providers.Verified{}, providers.Unauthenticatedf("missing %s", github.SHA256SignatureHeader)
	}
	if !strings.HasPrefix(sig, "sha256=") {
		return providers.Verified{}, providers.Unauthenticatedf("signature is not sha256")
	}
	last := fmt.Errorf("no secret")
	for _, s := range v {
		payload, err := github.ValidatePayloadFromBody(h.Get("Content-Type"), bytes.NewReader(body), sig, []byte(s.Value))
		if err == nil {
			return providers.Verified{SecretID: s.ID, Payload: payload}, nil
		}
		last = err
	}
	return providers.Verified{}, providers.Unauthenticatedf("github: %s", last.Error())
}

// Signature256 is the X-Hub-Signature-256 GitHub sends with body:
// sha256= and the hex HMAC-SHA256 of the body under secret.
func Signature256(body []byte, secret string) string {
	return "sha256=" + hexHMAC(sha256.New, body, secret)
}

func hexHMAC(h func() hash.Hash, body []byte, secret string) string {
	m := hmac.New(h, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign sets the two signatures GitHub sends for a hook with a secret:
// X-Hub-Signature-256 (the one Verify checks) and the legacy SHA-1
// X-Hub-Signature that GitHub still sends beside it. GitHub signs the body
// only, so at is not used.
func (Provider) Sign(secret string, h http.Header, body []byte, _ time.Time) error {
	h.Set(github.SHA256SignatureHeader, Signature256(body, secret))
	h.Set(github.SHA1SignatureHeader, "sha1="+hexHMAC(sha1.New, body, secret))
	return nil
}

// Unwrap is the JSON of an already-authenticated delivery: the body, or its
// "payload" field for form-encoded deliveries (what Verify returns). With
// neither a signature nor a secret, go-github checks nothing.
func (Provider) Unwrap(h http.Header, body []byte) ([]byte, error) {
	p, err := github.ValidatePayloadFromBody(h.Get("Content-Type"), bytes.NewReader(body), "", nil)
	if err != nil {
		return nil, providers.Malformedf("%s", err.Error())
	}
	return p, nil
}

// Normalize reads a delivery: X-GitHub-Delivery is the id kept across redeliveries, the
// installation is the account, the repository the resource.
func (Provider) Normalize(_ hookintype.EndpointSettings, h http.Header, doc gjson.Result) (providers.Normalized, error) {
	// X-GitHub-Delivery is a header and GitHub signs the body only.
	n := providers.Normalized{UnsignedEventID: true}
	n.EventID = h.Get("X-GitHub-Delivery")
	if n.EventID == "" {
		return n, providers.Malformedf("missing X-GitHub-Delivery")
	}
	event := h.Get("X-GitHub-Event")
	if event == "" {
		return n, providers.Malformedf("missing X-GitHub-Event")
	}
	n.EventType = event
	if a := doc.Get("action"); a.Type == gjson.String && a.Str != "" {
		n.EventType = event + "." + a.Str
	}
	switch {
	case doc.Get("installation.id").Exists():
		n.Account = doc.Get("installation.id").String()
	case doc.Get("organization.login").Exists():
		n.Account = doc.Get("organization.login").String()
	case doc.Get("repository.owner.login").Exists():
		n.Account = doc.Get("repository.owner.login").String()
	}
	switch {
	case doc.Get("repository.full_name").Exists():
		n.ResourceKind, n.ResourceID = "repository", doc.Get("repository.full_name").String()
	case doc.Get("organization.login").Exists():
		n.ResourceKind, n.ResourceID = "organization", doc.Get("organization.login").String()
	}
	return n, nil
}

// KeepHeader keeps X-GitHub-* (event, delivery, hook ids) except the
// installation target id.
func (Provider) KeepHeader(name string) bool {
	return strings.HasPrefix(name, "x-github-") && name != "x-github-hook-installation-target-id"
}

// CheckSecret requires at least 24 random bytes: GitHub accepts any string,
// so the strength is ours to demand.
func (Provider) CheckSecret(secret string) error {
	if err := providers.CheckRandom(secret); err != nil {
		return fmt.Errorf("github: %w", err)
	}
	return nil
}
