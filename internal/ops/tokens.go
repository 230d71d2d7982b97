package ops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/access"
)

// Roles lists the roles, least to most privileged: a viewer reads (never payloads), an
// operator also replays, resolves, releases and reads payloads, an admin
// also manages endpoints, secrets and workspaces.
var Roles = []string{access.TokenViewer, access.TokenOperator, access.TokenAdmin}

// RoleAtLeast reports whether role grants at least least.
func RoleAtLeast(role, least string) bool {
	rank := func(r string) int {
		for i, x := range Roles {
			if x == r {
				return i
			}
		}
		return -1
	}
	return rank(role) >= 0 && rank(role) >= rank(least)
}

// TokenPrefix starts every API token, so one found in a log or a paste is
// recognizable.
const TokenPrefix = "hki_"

var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,62}$`)

// HashToken is what is stored of a token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// NewToken is a token just created: Token is shown once and never again.
type NewToken struct {
	access.APIToken
	Token string `json:"token"`
}

// CreateToken creates an API token with role for name and returns it; only
// its SHA-256 is stored. Audited.
func (s *Service) CreateToken(ctx context.Context, who Actor, name, role string) (*NewToken, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	if !tokenName.MatchString(name) {
		return nil, Invalidf("name must be 1-63 letters, digits, '.', '_', '@' or '-', starting with a letter or digit (got %q)", name)
	}
	if !RoleAtLeast(role, access.TokenViewer) {
		return nil, Invalidf("role must be one of %s (got %q)", strings.Join(Roles, ", "), role)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	t, err := access.InsertAPIToken(ctx, s.Store.Pool, name, role, who.Name, HashToken(tok))
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, &ConflictError{Err: err}
		}
		return nil, err
	}
	if _, err := s.audit(ctx, s.Store.Pool, who, "token_create", "token:"+name, "", map[string]any{"role": role}); err != nil {
		return nil, err
	}
	return &NewToken{APIToken: *t, Token: tok}, nil
}

// ListTokens lists tokens (never their values, which are not stored).
func (s *Service) ListTokens(ctx context.Context) ([]access.APIToken, error) {
	return access.ListAPITokens(ctx, s.Store.Pool)
}

// RevokeToken revokes a token by name at once. Audited.
func (s *Service) RevokeToken(ctx context.Context, who Actor, name string) (*access.APIToken, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	t, err := access.RevokeAPIToken(ctx, s.Store.Pool, name)
	if err != nil {
		return nil, err
	}
	_, err = s.audit(ctx, s.Store.Pool, who, "token_revoke", "token:"+name, "", map[string]any{"role": t.Role})
	return t, err
}

// ErrBadToken is a missing, unknown or revoked token.
var ErrBadToken = errors.New("missing, unknown or revoked API token")

// Authenticate returns the token record of a presented token.
func (s *Service) Authenticate(ctx context.Context, token string) (*access.APIToken, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 100 {
		return nil, ErrBadToken
	}
	t, err := access.LookupAPIToken(ctx, s.Store.Pool, HashToken(token))
	if errors.Is(err, fault.ErrNotFound) {
		return nil, ErrBadToken
	}
	return t, err
}

// SessionPrefix starts every console session id (the session cookie).
const SessionPrefix = "hks_"

// StartSession starts a console session for token t, lasting ttl, and
// returns its id (the cookie's value): random, stored only as its SHA-256.
func (s *Service) StartSession(ctx context.Context, t *access.APIToken, ttl time.Duration) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := SessionPrefix + base64.RawURLEncoding.EncodeToString(raw)
	if err := access.StartSession(ctx, s.Store.Pool, HashToken(id), t.ID, ttl); err != nil {
		return "", err
	}
	return id, nil
}

// SessionToken returns the token record of a live console session (not
// expired, not signed out, its token not revoked), or ErrBadToken.
func (s *Service) SessionToken(ctx context.Context, id string) (*access.APIToken, error) {
	if !strings.HasPrefix(id, SessionPrefix) || len(id) > 100 {
		return nil, ErrBadToken
	}
	t, err := access.SessionToken(ctx, s.Store.Pool, HashToken(id))
	if errors.Is(err, fault.ErrNotFound) {
		return nil, ErrBadToken
	}
	return t, err
}

// EndSession ends a console session (sign-out); ending one that is gone
// is no error.
func (s *Service) EndSession(ctx context.Context, id string) error {
	if !strings.HasPrefix(id, SessionPrefix) || len(id) > 100 {
		return nil
	}
	_, err := access.EndSession(ctx, s.Store.Pool, HashToken(id))
	return err
}
