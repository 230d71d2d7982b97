package store

import (
	"encoding/hex"

	"github.com/hookinbox/hookinbox/internal/secretbox"
)

// This file holds how secrets are kept at rest: sealed by
// internal/secretbox, each value bound to the row it belongs to, and the
// bulk passes that seal plain values left from before (SealPlaintext) and
// re-encrypt under a new key (Reseal).

// Keyring is the secrets keyring the store was opened with, or
// secretbox.ErrNoKey when it has none.
func (s *Store) Keyring() (*secretbox.Keyring, error) {
	if s.Keys == nil {
		return nil, secretbox.ErrNoKey
	}
	return s.Keys, nil
}

// The contexts each sealed value is bound to: a value copied into another
// row does not open there.

// SecretContext binds an endpoint signing secret to its endpoint.
func SecretContext(slug string) string { return "endpoint_secrets.secret\x00" + slug }

// APIKeyContext binds an endpoint's API key to its endpoint.
func APIKeyContext(slug string) string { return "endpoints.api_key\x00" + slug }

// DestinationContext binds a team destination's secret to its workspace and name.
func DestinationContext(workspace, name string) string {
	return "team_destinations.secret\x00" + workspace + "\x00" + name
}

// ForwardContext binds a forward route's signing secret to its route.
func ForwardContext(name string) string { return "forward_routes.secret\x00" + name }

// SecretFingerprint is the keyed lookup tag of a signing secret.
func SecretFingerprint(kr *secretbox.Keyring, secret string) []byte {
	return kr.Fingerprint("endpoint_secrets.secret", secret)
}

// Display fingerprint columns: what DisplayFingerprint tags.
const (
	DisplaySecret = "endpoint_secrets.secret"
	DisplayAPIKey = "endpoints.api_key" //nolint:gosec // a column's name, no credential
)

// DisplayFingerprint is the short tag of a secret value that listings and
// the audit show (8 hex digits): keyed by kr (HMAC-SHA256 under a key
// derived from its current key), so whoever sees it cannot check a guess
// of the value without the secrets key. column is DisplaySecret or
// DisplayAPIKey. It changes with the current key (rotation recomputes it).
func DisplayFingerprint(kr *secretbox.Keyring, column, v string) string {
	return hex.EncodeToString(kr.Fingerprint("display/"+column, v)[:4])
}

// OpenValue returns a column's value: the sealed one opened with kr, else
// the plain one left from before sealing (until SealPlaintext runs), else "".
func OpenValue(kr *secretbox.Keyring, plain *string, sealed []byte, keyID *string, context string) (string, error) {
	if sealed != nil {
		if kr == nil {
			return "", secretbox.ErrNoKey
		}
		id := ""
		if keyID != nil {
			id = *keyID
		}
		b, err := kr.Open(sealed, id, context)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	if plain != nil {
		return *plain, nil
	}
	return "", nil
}
