package keys

import (
	"fmt"
	"log/slog"
	"time"
)

// This file holds what an endpoint is configured with that the providers
// need to verify and read a delivery, without the database.

// Secret is a signing secret. Its String and LogValue never reveal it.
type Secret struct {
	ID    int64
	Value string
	// Accounts are the source accounts the secret may sign for; empty means
	// any account linked to the endpoint.
	Accounts []string
	// Fingerprint is its display fingerprint as stored (keyed: it reveals
	// nothing of the value without the secrets key); "" before one is.
	Fingerprint string
	CreatedAt   time.Time
}

// MayClaim reports whether a delivery verified by s may belong to account.
func (s Secret) MayClaim(account string) bool {
	if len(s.Accounts) == 0 {
		return true
	}
	for _, a := range s.Accounts {
		if a == account {
			return true
		}
	}
	return false
}

// String redacts the secret: its id and display fingerprint.
func (s Secret) String() string {
	if s.Fingerprint == "" {
		return fmt.Sprintf("secret#%d", s.ID)
	}
	return fmt.Sprintf("secret#%d(%s)", s.ID, s.Fingerprint)
}

// LogValue redacts the secret in structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// EndpointSettings are per-provider extraction settings. JSON paths use
// gjson syntax (dotted: data.object.id).
type EndpointSettings struct {
	// TypePath locates the event type (Standard Webhooks; default "type").
	TypePath string `json:"type_path,omitempty"`
	// ResourcePath locates the resource id (Standard Webhooks; default "data.id").
	ResourcePath string `json:"resource_path,omitempty"`
	// ResourceKind names the resource kind (default: the type's first dotted part).
	ResourceKind string `json:"resource_kind,omitempty"`
	// AccountPath locates the source account in the payload (Standard
	// Webhooks); empty means the endpoint's own account.
	AccountPath string `json:"account_path,omitempty"`
	// VersionPath locates a monotonic per-resource version, when the
	// provider supplies one.
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

// SlugPattern is what an endpoint slug may be: the CHECK on endpoints.slug
// (migrations/0001). MaxSlugLen is its longest.
const (
	SlugPattern = `^[a-z0-9][a-z0-9_-]{0,62}$`
	MaxSlugLen  = 63
)

// ValidSlug reports whether s matches SlugPattern. The intake checks it
// before anything else, so a slug no endpoint can have never reaches the
// database, a log line unbounded, or a metric label.
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > MaxSlugLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
