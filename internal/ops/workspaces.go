package ops

import (
	"context"
	"net/mail"
	"net/url"
	"strings"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/records"
)

// ListWorkspaces lists workspaces by id.
func (s *Service) ListWorkspaces(ctx context.Context, limit int) ([]records.WorkspaceSummary, error) {
	if limit < 1 || limit > MaxListLimit {
		return nil, Invalidf("limit must be between 1 and %d", MaxListLimit)
	}
	return records.ListWorkspaces(ctx, s.Store.Pool, limit)
}

// WorkspaceView is one workspace: balance, access, email, destinations.
type WorkspaceView struct {
	ID             string            `json:"id"`
	CreditsBalance int64             `json:"credits_balance"`
	Email          string            `json:"email"`
	HasAccess      bool              `json:"has_access"`
	Destinations   []DestinationView `json:"destinations"`
}

// DestinationView is a team destination as shown (never its secret).
type DestinationView struct {
	ID        int64  `json:"id"`
	Workspace string `json:"workspace"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Target    string `json:"target"`
	Signed    bool   `json:"signed"`
	Enabled   bool   `json:"enabled"`
}

// ShowWorkspace reads one workspace.
func (s *Service) ShowWorkspace(ctx context.Context, id string) (*WorkspaceView, error) {
	w, err := records.GetWorkspace(ctx, s.Store.Pool, id)
	if err != nil {
		return nil, err
	}
	access, err := records.WorkspaceHasAccess(ctx, s.Store.Pool, w.ID)
	if err != nil {
		return nil, err
	}
	ds, err := s.ListDestinations(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	return &WorkspaceView{ID: w.ID, CreditsBalance: w.CreditsBalance, Email: w.Email, HasAccess: access, Destinations: ds}, nil
}

// ListDestinations lists team destinations (one workspace's, or all).
func (s *Service) ListDestinations(ctx context.Context, workspace string) ([]DestinationView, error) {
	ds, err := outbox.ListDestinations(ctx, s.Store.Pool, workspace, false)
	if err != nil {
		return nil, err
	}
	out := []DestinationView{}
	for _, d := range ds {
		out = append(out, DestinationView{d.ID, d.WorkspaceID, d.Name, d.Kind, d.Target, d.Signed, d.Enabled})
	}
	return out, nil
}

// SetWorkspaceEmail sets where a workspace's credit confirmations go
// ("" stops them), creating the workspace if new. Audited.
func (s *Service) SetWorkspaceEmail(ctx context.Context, who Actor, id, email, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	if strings.TrimSpace(id) == "" {
		return Invalidf("a workspace id is required")
	}
	if email != "" {
		if _, err := mail.ParseAddress(email); err != nil {
			return Invalidf("email: %v", err)
		}
	}
	if err := records.SetWorkspaceEmail(ctx, s.Store.Pool, id, email); err != nil {
		return err
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "workspace_email", "workspace:"+id, reason, map[string]any{"email": email})
	return err
}

// NewDestination is a team destination to add or replace.
type NewDestination struct {
	Workspace string
	Name      string
	// Webhook (with Secret) or Email: exactly one.
	Webhook string
	Secret  string
	Email   string
}

// UpsertDestination adds or replaces a team destination. Audited (never
// the secret).
func (s *Service) UpsertDestination(ctx context.Context, who Actor, n NewDestination, reason string) (DestinationView, error) {
	if err := who.check(); err != nil {
		return DestinationView{}, err
	}
	d := outbox.Destination{WorkspaceID: n.Workspace, Name: n.Name, Enabled: true}
	switch {
	case n.Webhook != "" && n.Email == "":
		u, err := url.Parse(n.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return DestinationView{}, Invalidf("webhook must be an http(s) URL")
		}
		if err := validateSecret(keys.ProviderStandard, n.Secret); err != nil {
			return DestinationView{}, Invalidf("secret: %v", err)
		}
		d.Kind, d.Target, d.Secret = "webhook", n.Webhook, n.Secret
	case n.Email != "" && n.Webhook == "":
		if _, err := mail.ParseAddress(n.Email); err != nil {
			return DestinationView{}, Invalidf("email: %v", err)
		}
		d.Kind, d.Target = "email", n.Email
	default:
		return DestinationView{}, Invalidf("give exactly one of a webhook or an email")
	}
	if !SlugPattern.MatchString(n.Name) {
		return DestinationView{}, Invalidf("name must be 1-63 lowercase letters, digits, '-' or '_'")
	}
	if strings.TrimSpace(n.Workspace) == "" {
		return DestinationView{}, Invalidf("a workspace id is required")
	}
	// The secret is sealed with the store's keyring.
	if err := outbox.UpsertDestination(ctx, s.Store.Pool, s.Store.Keys, d); err != nil {
		return DestinationView{}, err
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "destination_upsert", "workspace:"+n.Workspace, reason,
		map[string]any{"name": n.Name, "kind": d.Kind, "signed": d.Secret != ""})
	return DestinationView{Workspace: d.WorkspaceID, Name: d.Name, Kind: d.Kind, Target: d.Target, Signed: d.Secret != "", Enabled: true}, err
}
