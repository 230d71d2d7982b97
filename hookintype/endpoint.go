package hookintype

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Secret is one of an endpoint's active signing secrets, as a provider's
// Verifier receives them (several while one is rotated). Its String,
// GoString, LogValue and JSON never reveal Value.
type Secret struct {
	// ID is the secret's id: a Verifier returns the id of the secret that
	// matched, and the inbox row records it.
	ID int64
	// Value is the secret itself, to compute the signature with.
	Value string
	// Accounts are the source accounts the secret may sign for; empty
	// means any account linked to the endpoint.
	Accounts []string
	// Fingerprint is its display fingerprint as stored (keyed: it reveals
	// nothing of the value without the secrets key); "" before one is.
	Fingerprint string
	// CreatedAt is when the secret was added to the endpoint.
	CreatedAt time.Time
}

// MayClaim reports whether a delivery verified by s may belong to account.
func (s Secret) MayClaim(account string) bool {
	return len(s.Accounts) == 0 || slices.Contains(s.Accounts, account)
}

// String redacts the secret: its id and display fingerprint.
func (s Secret) String() string {
	if s.Fingerprint == "" {
		return fmt.Sprintf("secret#%d", s.ID)
	}
	return fmt.Sprintf("secret#%d(%s)", s.ID, s.Fingerprint)
}

// GoString redacts the secret in %#v as String does.
func (s Secret) GoString() string { return s.String() }

// LogValue redacts the secret in structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON writes every field but Value, so that a secret marshaled
// with what holds it (a slice of them in a JSON log line, a struct in an
// answer) stays secret.
func (s Secret) MarshalJSON() ([]byte, error) {
	type redacted struct {
		ID          int64
		Accounts    []string
		Fingerprint string
		CreatedAt   time.Time
	}
	return json.Marshal(redacted{ID: s.ID, Accounts: s.Accounts, Fingerprint: s.Fingerprint, CreatedAt: s.CreatedAt})
}

// EndpointSettings are an endpoint's per-provider extraction settings, as
// a provider's Normalize and its API client receive them (`hookinbox
// endpoints add` sets them). JSON paths use gjson syntax (dotted:
// data.object.id). A provider of a team's own reads those that apply to
// it and ignores the rest.
type EndpointSettings struct {
	// TypePath locates the event type (Standard Webhooks; default "type").
	TypePath string `json:"type_path,omitempty"`
	// ResourcePath locates the resource id (Standard Webhooks; default
	// "data.id").
	ResourcePath string `json:"resource_path,omitempty"`
	// ResourceKind names the resource kind (default: the type's first
	// dotted part).
	ResourceKind string `json:"resource_kind,omitempty"`
	// AccountPath locates the source account in the payload (Standard
	// Webhooks); empty means the endpoint's own account.
	AccountPath string `json:"account_path,omitempty"`
	// VersionPath locates a monotonic per-resource version, when the
	// provider supplies one (every provider: the intake reads it).
	VersionPath string `json:"version_path,omitempty"`

	// GitHubHook names the GitHub webhook whose delivery log the recovery
	// schedule reads (GitHub never redelivers on its own): "repo:OWNER/NAME",
	// "org:LOGIN" or "app" (the GitHub App's own webhook). Empty: no recovery.
	GitHubHook string `json:"github_hook,omitempty"`
	// GitHubHookID is the id of a repository or organization hook.
	GitHubHookID int64 `json:"github_hook_id,omitempty"`
	// GitHubAppID is the App of an "app" hook; its API key is then the
	// App's private key (PEM), from which each call's JWT is signed.
	GitHubAppID int64 `json:"github_app_id,omitempty"`
	// GitHubRecovery is how a missing delivery comes back: "redeliver"
	// (default: GitHub sends it again, signed) or "fetch" (read from the
	// delivery log and admitted as a backfill).
	GitHubRecovery string `json:"github_recovery,omitempty"`
}
