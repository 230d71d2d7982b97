package ops

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/github"
)

// SlugPattern is what an endpoint slug (and a destination name) may be.
var SlugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// EndpointView is an endpoint as shown: secrets and the API key as
// fingerprints, never their values.
type EndpointView struct {
	Slug              string                `json:"slug"`
	Provider          string                `json:"provider"`
	Environment       string                `json:"environment"`
	Account           string                `json:"account,omitempty"`
	APIBaseURL        string                `json:"api_base_url,omitempty"`
	APIKeySet         bool                  `json:"api_key_set"`
	APIKeyFingerprint string                `json:"api_key_fingerprint,omitempty"`
	Settings          keys.EndpointSettings `json:"settings"`
	Secrets           []SecretView          `json:"secrets"`
	Links             map[string]string     `json:"links"`
}

// SecretView is a signing secret as shown.
type SecretView struct {
	ID          int64  `json:"id"`
	Fingerprint string `json:"fingerprint"`
	// Accounts are the source accounts the secret may sign for (none: any
	// account linked to the endpoint).
	Accounts  []string `json:"accounts,omitempty"`
	CreatedAt string   `json:"created_at"`
}

// SecretFingerprint is the display fingerprint of a signing secret under
// kr: what listings and the audit show of it (keyed, so it confirms no
// guess without the secrets key).
func SecretFingerprint(kr *secretbox.Keyring, secret string) string {
	return store.DisplayFingerprint(kr, store.DisplaySecret, secret)
}

// APIKeyFingerprint is the display fingerprint of a provider API key under kr.
func APIKeyFingerprint(kr *secretbox.Keyring, key string) string {
	return store.DisplayFingerprint(kr, store.DisplayAPIKey, key)
}

// NewEndpointView is the view of an endpoint: its fingerprints as stored,
// no secret opened.
func NewEndpointView(e *endpoints.Endpoint) EndpointView {
	v := EndpointView{Slug: e.Slug, Provider: e.Provider, Environment: e.Environment, Account: e.Account,
		APIBaseURL: e.APIBaseURL, APIKeySet: e.HasAPIKey || e.APIKey != "", APIKeyFingerprint: e.APIKeyFingerprint,
		Settings: e.Settings, Links: e.Links, Secrets: []SecretView{}}
	if v.Links == nil {
		v.Links = map[string]string{}
	}
	for _, s := range e.Secrets {
		v.Secrets = append(v.Secrets, SecretView{ID: s.ID, Fingerprint: s.Fingerprint, Accounts: s.Accounts,
			CreatedAt: s.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
	}
	return v
}

// SortedLinks renders an endpoint's links as "account→workspace", sorted.
func (v EndpointView) SortedLinks() []string {
	var links []string
	for a, w := range v.Links {
		links = append(links, a+"→"+w)
	}
	sort.Strings(links)
	return links
}

// OwnAccount is the source account of the endpoint's events that name
// none: its own account when set, else its single linked account.
func (v EndpointView) OwnAccount() (string, bool) {
	if v.Account != "" {
		return v.Account, true
	}
	if len(v.Links) == 1 {
		for a := range v.Links {
			return a, true
		}
	}
	return "", false
}

// ListEndpoints lists every endpoint, by slug.
func (s *Service) ListEndpoints(ctx context.Context) ([]EndpointView, error) {
	eps, err := endpoints.ListEndpoints(ctx, s.Store)
	if err != nil {
		return nil, err
	}
	out := make([]EndpointView, 0, len(eps))
	for _, e := range eps {
		out = append(out, NewEndpointView(e))
	}
	return out, nil
}

// ShowEndpoint reads one endpoint (opening no secret).
func (s *Service) ShowEndpoint(ctx context.Context, slug string) (*EndpointView, error) {
	e, err := endpoints.GetEndpointView(ctx, s.Store, slug)
	if err != nil {
		return nil, err
	}
	v := NewEndpointView(e)
	return &v, nil
}

func endpointTarget(slug string) string { return "endpoint:" + slug }

// OfficialAPIHosts are the hosts of each provider's own API: an API base
// URL on another host (a simulator, GitHub Enterprise Server) gets the
// endpoint's API key only when registered with AllowCustomAPIHost.
var OfficialAPIHosts = map[string][]string{
	keys.ProviderStripe: {"api.stripe.com"},
	keys.ProviderGitHub: {"api.github.com"},
}

// checkBaseURL checks an API base URL's form: http(s), a host, no
// credentials, and https unless the host is loopback (the key would cross
// the network in the clear).
func checkBaseURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
		return nil, Invalidf("api base URL must be an http(s) URL without credentials")
	}
	if p.Scheme == "http" && !loopbackHost(p.Hostname()) {
		return nil, Invalidf("api base URL %s: http:// is refused outside loopback (the API key would cross the network in the clear): use https", URLOrigin(u))
	}
	return p, nil
}

// customAPIHost reports whether base URL u (checked by checkBaseURL) is
// on a host other than provider's official API; allowed says whether that
// is allowed, and the error says how to allow it.
func customAPIHost(provider, u string, allowed bool) (bool, error) {
	if u == "" {
		return false, nil
	}
	p, err := checkBaseURL(u)
	if err != nil {
		return false, err
	}
	port := p.Port()
	if p.Scheme == "https" && (port == "" || port == "443") && slices.Contains(OfficialAPIHosts[provider], strings.ToLower(p.Hostname())) {
		return false, nil
	}
	if !allowed {
		official := "none"
		if hosts := OfficialAPIHosts[provider]; len(hosts) > 0 {
			official = "https://" + strings.Join(hosts, ", https://")
		}
		return true, Invalidf("api base URL %s is not %s's official API (%s): the endpoint's API key would be sent there and its "+
			"answers trusted; if that host is yours (a simulator, GitHub Enterprise Server), say so with --allow-custom-api-host "+
			"(allow_custom_api_host in the API), which is audited", URLOrigin(u), provider, official)
	}
	return true, nil
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func validatePath(name, p string) error {
	if strings.ContainsAny(p, " \t\n") || len(p) > 200 {
		return Invalidf("%s must be a gjson path such as data.object.id (got %q)", name, p)
	}
	return nil
}

func validateSettings(st keys.EndpointSettings) error {
	for name, p := range map[string]string{"type path": st.TypePath, "resource path": st.ResourcePath,
		"account path": st.AccountPath, "version path": st.VersionPath, "resource kind": st.ResourceKind} {
		if err := validatePath(name, p); err != nil {
			return err
		}
	}
	return nil
}

// ValidateNewEndpoint checks an endpoint before it is registered.
func ValidateNewEndpoint(e endpoints.NewEndpoint) error {
	if !SlugPattern.MatchString(e.Slug) {
		return Invalidf("slug must be 1-63 lowercase letters, digits, '-' or '_' (got %q)", e.Slug)
	}
	if _, ok := providers.Lookup(e.Provider); !ok {
		return Invalidf("provider must be %s (got %q)", providers.OneOf(), e.Provider)
	}
	if e.Environment != keys.EnvLive && e.Environment != keys.EnvTest {
		return Invalidf("environment must be live or test (got %q)", e.Environment)
	}
	if len(e.Secrets) == 0 {
		return Invalidf("a secret is required (repeat it to register several)")
	}
	for _, sec := range e.Secrets {
		if err := validateSecret(e.Provider, sec); err != nil {
			return Invalidf("secret: %v", err)
		}
	}
	if err := validateAccounts("secret accounts", e.SecretAccounts); err != nil {
		return err
	}
	if e.Account != "" && len(e.SecretAccounts) > 0 && !slices.Contains(e.SecretAccounts, e.Account) {
		return Invalidf("secret accounts %s do not include the endpoint's own account %s", strings.Join(e.SecretAccounts, ","), e.Account)
	}
	if _, err := customAPIHost(e.Provider, e.APIBaseURL, e.AllowCustomAPIHost); err != nil {
		return err
	}
	if err := checkHookSettings(e.Provider, e.Settings); err != nil {
		return err
	}
	return validateSettings(e.Settings)
}

// EndpointWarnings are what registering e is allowed but should say: a
// Shopify endpoint with neither its own account nor bound secrets trusts
// the unsigned shop header only while it links exactly one shop.
func EndpointWarnings(e endpoints.NewEndpoint) []string {
	var out []string
	if e.Provider == keys.ProviderShopify && e.Account == "" && len(e.SecretAccounts) == 0 {
		out = append(out, "Shopify's shop header is not signed; without an own account (--account) or secret accounts "+
			"(--secret-accounts) this endpoint accepts deliveries only while it links exactly one shop")
	}
	return out
}

// ParseAccounts splits a comma-separated list of source accounts.
func ParseAccounts(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// validateAccounts checks a list of source accounts a secret is bound to.
func validateAccounts(what string, accounts []string) error {
	for _, a := range accounts {
		if strings.TrimSpace(a) == "" || strings.ContainsAny(a, ", \t\n") || len(a) > 255 {
			return Invalidf("%s: %q is not a source account", what, a)
		}
	}
	return nil
}

func secretFingerprints(kr *secretbox.Keyring, secrets []string) []string {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		out = append(out, SecretFingerprint(kr, s))
	}
	return out
}

// AddEndpoint registers an endpoint. Audited (secrets as fingerprints).
func (s *Service) AddEndpoint(ctx context.Context, who Actor, e endpoints.NewEndpoint, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	if err := ValidateNewEndpoint(e); err != nil {
		return err
	}
	if err := endpoints.InsertEndpoint(ctx, s.Store, e); err != nil {
		if strings.Contains(err.Error(), "already exists") {
			return &ConflictError{Err: err}
		}
		return err
	}
	details := map[string]any{"provider": e.Provider, "environment": e.Environment, "account": e.Account,
		"api_base_url": e.APIBaseURL, "api_key_set": e.APIKey != "", "secrets": secretFingerprints(s.Store.Keys, e.Secrets),
		"secret_accounts": e.SecretAccounts}
	if custom, _ := customAPIHost(e.Provider, e.APIBaseURL, true); custom {
		details["custom_api_host"] = true
	}
	if e.APIKey != "" {
		details["api_key_fingerprint"] = APIKeyFingerprint(s.Store.Keys, e.APIKey)
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "endpoint_add", endpointTarget(e.Slug), reason, details)
	return err
}

// EndpointChange changes an endpoint; nil fields stay, "" clears an
// optional one.
type EndpointChange struct {
	Account      *string `json:"account,omitempty"`
	APIBaseURL   *string `json:"api_base_url,omitempty"`
	APIKey       *string `json:"api_key,omitempty"`
	TypePath     *string `json:"type_path,omitempty"`
	ResourcePath *string `json:"resource_path,omitempty"`
	ResourceKind *string `json:"resource_kind,omitempty"`
	AccountPath  *string `json:"account_path,omitempty"`
	VersionPath  *string `json:"version_path,omitempty"`
	// A GitHub endpoint's hook, whose delivery log the recover-github
	// schedule reads, and how it recovers a missing delivery.
	GitHubHook     *string `json:"github_hook,omitempty"`
	GitHubHookID   *int64  `json:"github_hook_id,omitempty"`
	GitHubAppID    *int64  `json:"github_app_id,omitempty"`
	GitHubRecovery *string `json:"github_recovery,omitempty"`
	// AllowCustomAPIHost lets APIBaseURL name a host other than the
	// provider's official API (audited).
	AllowCustomAPIHost bool `json:"allow_custom_api_host,omitempty"`
}

// Empty reports whether c changes nothing.
func (c EndpointChange) Empty() bool {
	c.AllowCustomAPIHost = false
	return c == EndpointChange{}
}

// UpdateEndpoint applies c to endpoint slug. Audited (the API key as a
// fingerprint).
func (s *Service) UpdateEndpoint(ctx context.Context, who Actor, slug string, c EndpointChange, reason string) (*EndpointView, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	if c.Empty() {
		return nil, Invalidf("nothing to change: give at least one field")
	}
	if c.APIBaseURL != nil && *c.APIBaseURL != "" {
		if _, err := checkBaseURL(*c.APIBaseURL); err != nil {
			return nil, err
		}
	}
	var changed []string
	details := map[string]any{}
	err := s.Store.Tx(ctx, func(tx pgx.Tx) error {
		e, err := endpoints.GetEndpointView(ctx, s.Store, slug)
		if err != nil {
			return err
		}
		u := endpoints.EndpointUpdate{Account: c.Account, APIBaseURL: c.APIBaseURL, APIKey: c.APIKey}
		set := e.Settings
		for _, f := range []struct {
			name string
			v    *string
			dst  *string
		}{{"type_path", c.TypePath, &set.TypePath}, {"resource_path", c.ResourcePath, &set.ResourcePath},
			{"resource_kind", c.ResourceKind, &set.ResourceKind}, {"account_path", c.AccountPath, &set.AccountPath},
			{"version_path", c.VersionPath, &set.VersionPath}} {
			if f.v != nil {
				details["previous_"+f.name], details[f.name] = *f.dst, *f.v
				*f.dst = *f.v
				changed = append(changed, f.name)
				u.Settings = &set
			}
		}
		if c.GitHubHook != nil {
			details["previous_github_hook"], details["github_hook"] = set.GitHubHook, *c.GitHubHook
			set.GitHubHook = *c.GitHubHook
			if *c.GitHubHook == "" {
				set.GitHubHookID, set.GitHubAppID = 0, 0
			}
			changed, u.Settings = append(changed, "github_hook"), &set
		}
		if c.GitHubHookID != nil {
			set.GitHubHookID = *c.GitHubHookID
			changed, u.Settings = append(changed, "github_hook_id"), &set
		}
		if c.GitHubAppID != nil {
			set.GitHubAppID = *c.GitHubAppID
			changed, u.Settings = append(changed, "github_app_id"), &set
		}
		if c.GitHubRecovery != nil {
			details["previous_github_recovery"], details["github_recovery"] = set.GitHubRecovery, *c.GitHubRecovery
			set.GitHubRecovery = *c.GitHubRecovery
			changed, u.Settings = append(changed, "github_recovery"), &set
		}
		if err := validateSettings(set); err != nil {
			return err
		}
		if err := checkHookSettings(e.Provider, set); err != nil {
			return err
		}
		if c.Account != nil {
			details["previous_account"], details["account"] = e.Account, *c.Account
			changed = append(changed, "account")
		}
		if c.APIBaseURL != nil && *c.APIBaseURL != e.APIBaseURL {
			// The key was given for the old host: it never follows the URL.
			if e.HasAPIKey && c.APIKey == nil {
				return Invalidf("changing the API base URL of %s needs its API key again (--api-key-file, --api-key-env, "+
					"--api-key-stdin or --api-key; api_key in the API), or --api-key \"\" to remove it: a key is never sent "+
					"to a host it was not given for", slug)
			}
			custom, err := customAPIHost(e.Provider, *c.APIBaseURL, c.AllowCustomAPIHost)
			if err != nil {
				return err
			}
			if custom {
				details["custom_api_host"] = true
			}
		}
		if c.APIBaseURL != nil {
			details["previous_api_base_url"], details["api_base_url"] = e.APIBaseURL, *c.APIBaseURL
			changed = append(changed, "api_base_url")
		}
		if c.APIKey != nil {
			if e.APIKeyFingerprint != "" {
				details["previous_api_key_fingerprint"] = e.APIKeyFingerprint
			}
			if *c.APIKey != "" {
				kr, err := s.Store.Keyring()
				if err != nil {
					return err
				}
				details["api_key_fingerprint"] = APIKeyFingerprint(kr, *c.APIKey)
			}
			changed = append(changed, "api_key")
		}
		if err := endpoints.UpdateEndpoint(ctx, tx, s.Store.Keys, slug, u); err != nil {
			return err
		}
		details["changed"] = changed
		_, err = s.audit(ctx, tx, who, "endpoint_update", endpointTarget(slug), reason, details)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.ShowEndpoint(ctx, slug)
}

// LinkAccount maps a source account of an endpoint to a workspace (created
// if new). Audited.
func (s *Service) LinkAccount(ctx context.Context, who Actor, slug, account, workspace, reason string) (endpoints.LinkResult, error) {
	if err := who.check(); err != nil {
		return endpoints.LinkResult{}, err
	}
	if strings.TrimSpace(account) == "" || strings.TrimSpace(workspace) == "" {
		return endpoints.LinkResult{}, Invalidf("account and workspace must not be empty")
	}
	res, err := endpoints.Link(ctx, s.Store, slug, account, workspace)
	if err != nil {
		return res, err
	}
	_, err = s.audit(ctx, s.Store.Pool, who, "endpoint_link", endpointTarget(slug), reason,
		map[string]any{"account": account, "workspace": workspace, "previous_workspace": res.PreviousWorkspace,
			"own_account": res.OwnAccount, "pinned_own_account": res.PinnedOwnAccount})
	return res, err
}

// UnlinkAccount removes an account mapping. Audited.
func (s *Service) UnlinkAccount(ctx context.Context, who Actor, slug, account, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	if err := endpoints.UnlinkAccount(ctx, s.Store, slug, account); err != nil {
		return err
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "endpoint_unlink", endpointTarget(slug), reason, map[string]any{"account": account})
	return err
}

// OwnAccountView says where an endpoint's events that name no account go.
type OwnAccountView struct {
	Slug string `json:"slug"`
	// Account is the endpoint's own account as set ("": none).
	Account string `json:"account"`
	// OwnAccount is the source account of its events that name none:
	// Account, else the single linked account ("": none, and such events
	// are quarantined as unknown_account).
	OwnAccount string `json:"own_account,omitempty"`
	// Workspace is where those events go ("": OwnAccount is not linked,
	// and they are quarantined as unknown_account until it is).
	Workspace string `json:"workspace,omitempty"`
}

// SetOwnAccount names endpoint slug's own account, the source account of
// its events that carry none (for Stripe without Connect, the account
// itself; with Connect, the platform's). "" removes it: such events then go
// to the endpoint's single linked account, or are quarantined. Audited
// (endpoint_set_account, with the previous account).
func (s *Service) SetOwnAccount(ctx context.Context, who Actor, slug, account, reason string) (OwnAccountView, error) {
	if err := who.check(); err != nil {
		return OwnAccountView{}, err
	}
	if strings.TrimSpace(slug) == "" {
		return OwnAccountView{}, Invalidf("an endpoint slug is required")
	}
	account = strings.TrimSpace(account)
	if account != "" {
		if err := validateAccounts("account", []string{account}); err != nil {
			return OwnAccountView{}, err
		}
	}
	before, err := endpoints.GetEndpointView(ctx, s.Store, slug)
	if err != nil {
		return OwnAccountView{}, err
	}
	if err := endpoints.SetOwnAccount(ctx, s.Store, slug, account); err != nil {
		return OwnAccountView{}, err
	}
	if _, err := s.audit(ctx, s.Store.Pool, who, "endpoint_set_account", endpointTarget(slug), reason,
		map[string]any{"account": account, "previous_account": before.Account}); err != nil {
		return OwnAccountView{}, err
	}
	v, err := s.ShowEndpoint(ctx, slug)
	if err != nil {
		return OwnAccountView{}, err
	}
	out := OwnAccountView{Slug: slug, Account: v.Account}
	if own, ok := v.OwnAccount(); ok {
		out.OwnAccount, out.Workspace = own, v.Links[own]
	}
	return out, nil
}

// RemoveEndpoint removes an endpoint, its secrets and links. Audited.
func (s *Service) RemoveEndpoint(ctx context.Context, who Actor, slug, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	if err := endpoints.DeleteEndpoint(ctx, s.Store, slug); err != nil {
		return err
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "endpoint_remove", endpointTarget(slug), reason, nil)
	return err
}

// SecretAdded is a new signing secret, by id and fingerprint.
type SecretAdded struct {
	ID          int64  `json:"id"`
	Fingerprint string `json:"fingerprint"`
	// Retired are the ids of secrets removed with it (rotation done at once).
	Retired []int64 `json:"retired,omitempty"`
}

// NewSecret is a signing secret to add.
type NewSecret struct {
	Secret string `json:"secret"`
	// Accounts binds the secret to the source accounts it may sign for
	// (none: any account linked to the endpoint). A secret already
	// registered keeps its binding (BindSecret changes it).
	Accounts []string `json:"accounts,omitempty"`
	// RetireOthers removes every other secret in the same transaction.
	RetireOthers bool `json:"retire_others"`
}

// AddSecret adds a signing secret (rotation: both are accepted until the
// old one is removed), sealed with the store's keyring and checked against
// the provider's strength rules; n.RetireOthers removes every other secret
// in the same transaction. Audited by fingerprint.
func (s *Service) AddSecret(ctx context.Context, who Actor, slug string, n NewSecret, reason string) (SecretAdded, error) {
	var out SecretAdded
	if err := who.check(); err != nil {
		return out, err
	}
	if err := validateAccounts("accounts", n.Accounts); err != nil {
		return out, err
	}
	// No secret is opened: retiring the others needs their ids only.
	ep, err := endpoints.GetEndpointView(ctx, s.Store, slug)
	if err != nil {
		return out, err
	}
	secret, retireOthers := n.Secret, n.RetireOthers
	if err := validateSecret(ep.Provider, secret); err != nil {
		return out, Invalidf("secret: %v", err)
	}
	err = s.Store.Tx(ctx, func(tx pgx.Tx) error {
		id, err := endpoints.InsertSecret(ctx, tx, s.Store.Keys, slug, secret, n.Accounts)
		if err != nil {
			return err
		}
		out = SecretAdded{ID: id, Fingerprint: SecretFingerprint(s.Store.Keys, secret)}
		if retireOthers {
			for _, old := range ep.Secrets {
				if old.ID == id {
					continue
				}
				if _, err := tx.Exec(ctx, `DELETE FROM endpoint_secrets WHERE endpoint_slug = $1 AND id = $2`, slug, old.ID); err != nil {
					return err
				}
				out.Retired = append(out.Retired, old.ID)
			}
		}
		_, err = s.audit(ctx, tx, who, "endpoint_secret_add", endpointTarget(slug), reason,
			map[string]any{"secret_id": id, "fingerprint": out.Fingerprint, "accounts": n.Accounts, "retired": out.Retired})
		return err
	})
	return out, err
}

// BindSecret sets the source accounts signing secret id of endpoint slug
// may sign for (none: any account linked to the endpoint); a delivery it
// verifies that claims another account is quarantined as account_mismatch.
// Audited.
func (s *Service) BindSecret(ctx context.Context, who Actor, slug string, id int64, accounts []string, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	if err := validateAccounts("accounts", accounts); err != nil {
		return err
	}
	if err := endpoints.BindSecret(ctx, s.Store, slug, id, accounts); err != nil {
		return err
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "endpoint_secret_bind", endpointTarget(slug), reason,
		map[string]any{"secret_id": id, "accounts": accounts})
	return err
}

// RemoveSecret removes a signing secret by id (never the last one). Audited.
func (s *Service) RemoveSecret(ctx context.Context, who Actor, slug string, id int64, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	if err := endpoints.DeleteSecret(ctx, s.Store, slug, id); err != nil {
		if !errors.Is(err, fault.ErrNotFound) && strings.Contains(err.Error(), "last secret") {
			return &ConflictError{Err: err}
		}
		return err
	}
	_, err := s.audit(ctx, s.Store.Pool, who, "endpoint_secret_remove", endpointTarget(slug), reason, map[string]any{"secret_id": id})
	return err
}

// checkHookSettings refuses hook settings on a provider that has no
// delivery log, and a hook or recovery mode that cannot be used.
func checkHookSettings(provider string, s keys.EndpointSettings) error {
	if s.GitHubHook == "" && s.GitHubHookID == 0 && s.GitHubAppID == 0 && s.GitHubRecovery == "" {
		return nil
	}
	if provider != keys.ProviderGitHub {
		return Invalidf("--github-hook, --github-hook-id, --github-app-id and --github-recovery are for github endpoints (this one is %s)", provider)
	}
	if _, ok, err := github.HookFromSettings(s); err != nil {
		return Invalidf("%v", err)
	} else if !ok && (s.GitHubHookID != 0 || s.GitHubAppID != 0) {
		return Invalidf("--github-hook-id and --github-app-id need --github-hook")
	}
	if _, err := github.RecoveryMode(s); err != nil {
		return Invalidf("--github-recovery: %v", err)
	}
	return nil
}
