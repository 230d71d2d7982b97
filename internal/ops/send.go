package ops

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// Signing deliveries as the provider would (`hookinbox send`): the one act
// that reads a signing secret out of the store for use outside the intake.
// The secret never leaves this package: a SigningKey signs with it and
// shows only its id and fingerprint.

// ActionSigningSecretRead is the audited action of SigningKey.
const ActionSigningSecretRead = "endpoint_secret_read"

// SigningKeyRequest asks for the key to sign deliveries to one endpoint.
type SigningKeyRequest struct {
	Slug string
	// Account is the source account the deliveries will name; it must be
	// linked to the endpoint, and the secret chosen is one that may sign
	// for it.
	Account string
	// AllowLive opens the secret of a live endpoint too. Sending made-up
	// events is for local and staging work, so a live endpoint is refused
	// unless it is set.
	AllowLive bool
	// Reason is recorded in the audit (default: what was done).
	Reason string
}

// SigningKey signs deliveries to one endpoint with one of its active
// signing secrets, the newest that may sign for the account. It shows the
// secret only as its id and fingerprint: formatting, logging or encoding it
// never prints the value.
type SigningKey struct {
	Endpoint    string `json:"endpoint"`
	Provider    string `json:"provider"`
	Environment string `json:"environment"`
	// Account is the source account it signs for.
	Account string `json:"account"`
	// Workspace is the account's workspace on the endpoint.
	Workspace   string `json:"workspace"`
	SecretID    int64  `json:"secret_id"`
	Fingerprint string `json:"fingerprint"`
	// ActionID is the audit entry of the secret's read.
	ActionID int64 `json:"operator_action"`

	secret   keys.Secret
	provider providers.Provider
}

// Sign adds the provider's signature headers for body at time at to h
// (providers.Signer).
func (k *SigningKey) Sign(h http.Header, body []byte, at time.Time) error {
	if k == nil || k.provider == nil || k.secret.Value == "" {
		return fmt.Errorf("no signing key")
	}
	return providers.Sign(k.provider, k.secret.Value, h, body, at)
}

// String names the key by its endpoint and secret id, never the secret.
func (k SigningKey) String() string {
	return "signing key of endpoint " + k.Endpoint + " (secret #" + strconv.FormatInt(k.SecretID, 10) + ", " + k.Fingerprint + ")"
}

// GoString is String: %#v never shows the secret either.
func (k SigningKey) GoString() string { return k.String() }

// LogValue redacts the key in structured logs.
func (k SigningKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// SigningKey opens the signing secret deliveries to an endpoint are signed
// with, for `hookinbox send`: the newest active secret of the endpoint that
// may sign for req.Account (a secret bound to other accounts would have its
// deliveries quarantined as account_mismatch). The endpoint must be one
// hookinbox can sign for (its provider is a providers.Signer), the account
// linked to it, and a live endpoint is refused without req.AllowLive.
// Reading a secret is audited (endpoint_secret_read, with the secret's id
// and fingerprint and the account), before the key is returned.
func (s *Service) SigningKey(ctx context.Context, who Actor, req SigningKeyRequest) (*SigningKey, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Slug) == "" {
		return nil, Invalidf("an endpoint slug is required")
	}
	account := strings.TrimSpace(req.Account)
	if account == "" {
		return nil, Invalidf("the account the deliveries name is required")
	}
	// The intake's own read: the signing secrets and links, never the API key.
	e, err := endpoints.GetIntakeEndpoint(ctx, s.Store, req.Slug)
	if err != nil {
		return nil, err
	}
	p, ok := providers.Lookup(e.Provider)
	if _, signs := p.(providers.Signer); !ok || !signs {
		return nil, Invalidf("hookinbox cannot sign deliveries for endpoint %s's provider %s", e.Slug, e.Provider)
	}
	if e.Environment == keys.EnvLive && !req.AllowLive {
		return nil, Invalidf("endpoint %s is a live endpoint: sending made-up events is for local and staging work "+
			"(give --live to send to it anyway)", e.Slug)
	}
	workspace, ok := e.Links[account]
	if !ok {
		return nil, Invalidf("account %s is not linked to endpoint %s: its deliveries would be quarantined as unknown_account", account, e.Slug)
	}
	var chosen *keys.Secret
	for i := range e.Secrets {
		sec := &e.Secrets[i]
		if !sec.MayClaim(account) {
			continue
		}
		if chosen == nil || sec.CreatedAt.After(chosen.CreatedAt) || (sec.CreatedAt.Equal(chosen.CreatedAt) && sec.ID > chosen.ID) {
			chosen = sec
		}
	}
	if chosen == nil {
		return nil, &ConflictError{Err: fmt.Errorf("no signing secret of endpoint %s may sign for account %s: each is bound to other accounts "+
			"(hookinbox endpoints secrets bind --slug %s --id N --accounts ...)", e.Slug, account, e.Slug)}
	}
	k := &SigningKey{Endpoint: e.Slug, Provider: e.Provider, Environment: e.Environment, Account: account, Workspace: workspace,
		SecretID: chosen.ID, Fingerprint: chosen.Fingerprint, secret: *chosen, provider: p}
	k.ActionID, err = s.audit(ctx, s.Store.Pool, who, ActionSigningSecretRead, endpointTarget(e.Slug), req.Reason,
		map[string]any{"secret_id": chosen.ID, "fingerprint": k.Fingerprint, "account": account, "environment": e.Environment,
			"purpose": "sign test deliveries (hookinbox send)"})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// ConsoleEventPath is the operator console's page of an inbox event (its
// key as the intake logs it), relative to the console's base URL.
func ConsoleEventPath(key string) string { return "/events/" + url.PathEscape(key) }

// ConsoleQuarantinePath is the operator console's page of a quarantine
// entry, relative to the console's base URL.
func ConsoleQuarantinePath(id int64) string { return "/quarantine/" + strconv.FormatInt(id, 10) }

// ConsoleURL is a console page's full URL: path under the console's base
// URL (HOOKINBOX_CONSOLE_URL, else the console's address).
func (s *Service) ConsoleURL(path string) string { return s.Config.ConsoleBaseURL() + path }
