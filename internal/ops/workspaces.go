package ops

import (
	"context"
	"fmt"
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

// OriginsOnly cuts every webhook destination's URL to its origin (scheme
// and host): its path and query often carry the token that lets anyone
// post to the team's channel. What a viewer sees.
func (v *WorkspaceView) OriginsOnly() {
	for i := range v.Destinations {
		if v.Destinations[i].Kind == "webhook" {
			v.Destinations[i].Target = URLOrigin(v.Destinations[i].Target)
		}
	}
}

// URLOrigin is the scheme and host of raw, or "(unparseable URL)".
func URLOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparseable URL)"
	}
	return u.Scheme + "://" + u.Host
}

// ListDestinations lists team destinations (one workspace's, or all).
func (s *Service) ListDestinations(ctx context.Context, workspace string) ([]DestinationView, error) {
	ds, err := outbox.ListDestinationViews(ctx, s.Store.Pool, workspace)
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

// WorkspaceAdjustment is an operator's correction of a workspace's
// credits balance.
type WorkspaceAdjustment struct {
	// Credits to add (+N) or take back (-N); never 0.
	Credits int64 `json:"credits"`
	// OperationID is the operator's id for this correction, its business
	// key: a repeat changes nothing, so a retried request is safe.
	OperationID string `json:"operation_id"`
	// Reason is required: it is recorded in the audit.
	Reason string `json:"reason"`
	// Policy is the negative-balance policy for this act: allow, clamp or
	// hold ("": HOOKINBOX_NEGATIVE_BALANCE_POLICY).
	Policy string `json:"policy,omitempty"`
}

// AdjustmentView is what a correction did (or, repeated, had done).
type AdjustmentView struct {
	Workspace   string `json:"workspace"`
	OperationID string `json:"operation_id"`
	// Adjusted says this call changed the balance; false: the operation id
	// was used before, and nothing changed.
	Adjusted      bool   `json:"adjusted"`
	Requested     int64  `json:"requested"`
	Applied       int64  `json:"applied"`
	Shortfall     int64  `json:"shortfall"`
	Policy        string `json:"policy"`
	Decision      string `json:"decision"`
	BalanceBefore int64  `json:"balance_before"`
	BalanceAfter  int64  `json:"balance_after"`
	// ActionID is the audit entry of this call (0 when nothing changed).
	ActionID int64 `json:"operator_action,omitempty"`
}

// AdjustWorkspace corrects workspace id's balance by a.Credits, once per
// a.OperationID, through the same path as credit-note reversals: taking
// back more than the balance follows the negative-balance policy, and the
// decision is recorded. A repeated operation id asking the same changes
// nothing; one asking anything else is refused (a *ConflictError naming
// the first use). The correction and its audit entry (workspace_adjust:
// who, why, before, after) commit in one transaction, in the ledger.
func (s *Service) AdjustWorkspace(ctx context.Context, who Actor, id string, a WorkspaceAdjustment) (AdjustmentView, error) {
	if err := who.check(); err != nil {
		return AdjustmentView{}, err
	}
	policy := a.Policy
	if policy == "" {
		policy = orDefault(s.Config.NegativeBalancePolicy, keys.BalanceAllow)
	}
	switch {
	case strings.TrimSpace(id) == "":
		return AdjustmentView{}, Invalidf("a workspace id is required")
	case a.Credits == 0:
		return AdjustmentView{}, Invalidf("credits must be a non-zero whole number (+N adds, -N takes back)")
	case strings.TrimSpace(a.OperationID) == "":
		return AdjustmentView{}, Invalidf("an operation id is required: a repeat of it changes nothing")
	case strings.TrimSpace(a.Reason) == "":
		return AdjustmentView{}, Invalidf("a reason must say why (it is recorded in the audit)")
	case policy != keys.BalanceAllow && policy != keys.BalanceClamp && policy != keys.BalanceHold:
		return AdjustmentView{}, Invalidf("policy must be allow, clamp or hold (got %q)", policy)
	}
	// The ledger's tables are the credits domain's (its migration set).
	if err := s.requireDomain(ctx, records.TableCreditAdjustments, "credits"); err != nil {
		return AdjustmentView{}, err
	}
	res, err := adjustWorkspace(ctx, s.Store, operatorAdjustment{Workspace: id, Credits: a.Credits,
		OperationID: a.OperationID, Actor: who.Name, Reason: a.Reason, Policy: policy})
	if err != nil {
		return AdjustmentView{}, err
	}
	if res.Mismatch != "" {
		return AdjustmentView{}, &ConflictError{Err: fmt.Errorf("nothing changed: %s", res.Mismatch)}
	}
	d := res.Adjustment
	return AdjustmentView{Workspace: d.WorkspaceID, OperationID: d.Reference, Adjusted: res.Adjusted, Requested: d.Requested,
		Applied: d.Applied, Shortfall: d.Shortfall, Policy: d.Policy, Decision: d.Decision, BalanceBefore: d.BalanceBefore,
		BalanceAfter: d.BalanceAfter, ActionID: res.ActionID}, nil
}

// ErasureCounts says what an erasure redacted.
type ErasureCounts = records.ErasureCounts

// ErasureView is what EraseWorkspace did.
type ErasureView struct {
	Workspace string        `json:"workspace"`
	Counts    ErasureCounts `json:"counts"`
	// ActionID is the audit entry.
	ActionID int64 `json:"operator_action"`
}

// EraseWorkspace redacts, in one transaction, every stored payload and
// email address of workspace id: inbox and quarantine bodies, outbox
// payloads (unsent ones are stopped), the feedback texts they carried, and
// the workspace's, its destinations' and the outbox's addresses. Event keys
// and body hashes stay (a later redelivery is still a duplicate), and so do
// business records, balances and the lineage. The act and its counts are
// audited (workspace_erase) in the same transaction, in the ledger;
// erasing again finds nothing left and is audited too.
func (s *Service) EraseWorkspace(ctx context.Context, who Actor, id, reason string) (ErasureView, error) {
	if err := who.check(); err != nil {
		return ErasureView{}, err
	}
	if strings.TrimSpace(id) == "" {
		return ErasureView{}, Invalidf("a workspace id is required")
	}
	if strings.TrimSpace(reason) == "" {
		return ErasureView{}, Invalidf("a reason must say why (it is recorded in the audit)")
	}
	res, err := records.EraseWorkspace(ctx, s.Store, records.EraseRequest{Workspace: id, Actor: who.Name, Reason: reason})
	if err != nil {
		return ErasureView{}, err
	}
	return ErasureView{Workspace: id, Counts: res.Counts, ActionID: res.ActionID}, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
