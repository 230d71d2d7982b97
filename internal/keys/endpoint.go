package keys

import "github.com/hookinbox/hookinbox/hookintype"

// This file holds what an endpoint is configured with that the providers
// need to verify and read a delivery, without the database.

// Secret is a signing secret: the public hookintype.Secret. Its String,
// LogValue and JSON never reveal it.
type Secret = hookintype.Secret

// EndpointSettings are per-provider extraction settings (the public
// hookintype.EndpointSettings, stored as JSON with each endpoint).
type EndpointSettings = hookintype.EndpointSettings

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
