package github

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v72/github"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// This file is GitHub's delivery log client (the hook deliveries REST API,
// through go-github): what the recovery schedule needs, since GitHub never
// redelivers a failed delivery on its own.

// Hook scopes: whose webhook it is.
const (
	HookRepo = "repo"
	HookOrg  = "org"
	HookApp  = "app"
)

// Recovery modes (hookintype.EndpointSettings.GitHubRecovery).
const (
	RecoverRedeliver = keys.RecoverRedeliver
	RecoverFetch     = keys.RecoverFetch
)

// Hook names one GitHub webhook.
type Hook struct {
	Scope string // HookRepo, HookOrg or HookApp
	Owner string // repo: the repository's owner
	Repo  string // repo: the repository's name
	Org   string // org: the organization's login
	ID    int64  // repo, org: the hook's id
	AppID int64  // app: the App's id
}

// String is the hook as the settings spell it, with its id.
func (h Hook) String() string {
	switch h.Scope {
	case HookRepo:
		return fmt.Sprintf("repo:%s/%s#%d", h.Owner, h.Repo, h.ID)
	case HookOrg:
		return fmt.Sprintf("org:%s#%d", h.Org, h.ID)
	}
	return fmt.Sprintf("app:%d", h.AppID)
}

// HookFromSettings reads an endpoint's hook ("repo:OWNER/NAME" or
// "org:LOGIN" with a hook id, or "app" with an App id). ok is false when
// the endpoint names no hook.
func HookFromSettings(s hookintype.EndpointSettings) (h Hook, ok bool, err error) {
	spec := strings.TrimSpace(s.GitHubHook)
	if spec == "" {
		return Hook{}, false, nil
	}
	scope, rest, _ := strings.Cut(spec, ":")
	switch scope {
	case HookRepo:
		owner, repo, found := strings.Cut(rest, "/")
		if !found || owner == "" || repo == "" || strings.Contains(repo, "/") {
			return Hook{}, true, fmt.Errorf("github hook %q: a repository hook is repo:OWNER/NAME", spec)
		}
		h = Hook{Scope: HookRepo, Owner: owner, Repo: repo, ID: s.GitHubHookID}
	case HookOrg:
		if rest == "" || strings.Contains(rest, "/") {
			return Hook{}, true, fmt.Errorf("github hook %q: an organization hook is org:LOGIN", spec)
		}
		h = Hook{Scope: HookOrg, Org: rest, ID: s.GitHubHookID}
	case HookApp:
		if rest != "" {
			return Hook{}, true, fmt.Errorf("github hook %q: an App's hook is just \"app\" (with its App id)", spec)
		}
		if s.GitHubAppID <= 0 {
			return Hook{}, true, errors.New("github hook app: the App id is required")
		}
		return Hook{Scope: HookApp, AppID: s.GitHubAppID}, true, nil
	default:
		return Hook{}, true, fmt.Errorf("github hook %q: the scope is repo:OWNER/NAME, org:LOGIN or app", spec)
	}
	if h.ID <= 0 {
		return Hook{}, true, fmt.Errorf("github hook %q: the hook id is required", spec)
	}
	return h, true, nil
}

// RecoveryMode is the endpoint's recovery mode, RecoverRedeliver by default.
func RecoveryMode(s hookintype.EndpointSettings) (string, error) {
	switch s.GitHubRecovery {
	case "", RecoverRedeliver:
		return RecoverRedeliver, nil
	case RecoverFetch:
		return RecoverFetch, nil
	}
	return "", fmt.Errorf("github recovery %q: it is %s or %s", s.GitHubRecovery, RecoverRedeliver, RecoverFetch)
}

// HookClient reads and replays one hook's delivery log.
type HookClient struct {
	gh   *github.Client
	hook Hook
}

var (
	_ providers.HookDeliveries = (*HookClient)(nil)
	_ providers.HookClients    = Provider{}
)

// NewHookClient is the delivery log client of the endpoint's hook. The API
// key is a token (a fine-grained or classic token, or an installation token
// with the hooks' read and write permission) for repository and
// organization hooks, and the App's PEM private key for an App's hook. The
// base URL defaults to https://api.github.com/ (GitHub Enterprise Server:
// https://HOST/api/v3/).
func (Provider) NewHookClient(cfg providers.ClientConfig) (providers.HookDeliveries, error) {
	hook, ok, err := HookFromSettings(cfg.Settings)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the endpoint names no GitHub hook (endpoints update --github-hook)", providers.ErrNoClient)
	}
	return NewHookClient(hook, cfg.APIKey, cfg.BaseURL, nil)
}

// NewHookClient builds a client for hook; hc defaults to a client with a
// 30 s timeout.
func NewHookClient(hook Hook, apiKey, baseURL string, hc *http.Client) (*HookClient, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	} else {
		c := *hc
		hc = &c
	}
	var gh *github.Client
	if hook.Scope == HookApp {
		key, err := parsePrivateKey(apiKey)
		if err != nil {
			return nil, err
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &appTransport{base: base, appID: hook.AppID, key: key}
		gh = github.NewClient(hc)
	} else {
		gh = github.NewClient(hc).WithAuthToken(apiKey)
	}
	if baseURL != "" {
		u, err := url.Parse(strings.TrimSuffix(baseURL, "/") + "/")
		if err != nil {
			return nil, fmt.Errorf("github API base URL: %w", err)
		}
		gh.BaseURL = u
	}
	return &HookClient{gh: gh, hook: hook}, nil
}

// ListDeliveries lists one page of the hook's attempts, newest first.
func (c *HookClient) ListDeliveries(ctx context.Context, q providers.ListQuery) (providers.Page[providers.HookDelivery], error) {
	op := "list deliveries of " + c.hook.String()
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	opts := &github.ListCursorOptions{PerPage: limit, Cursor: q.Cursor}
	var list []*github.HookDelivery
	var resp *github.Response
	var err error
	switch c.hook.Scope {
	case HookRepo:
		list, resp, err = c.gh.Repositories.ListHookDeliveries(ctx, c.hook.Owner, c.hook.Repo, c.hook.ID, opts)
	case HookOrg:
		list, resp, err = c.gh.Organizations.ListHookDeliveries(ctx, c.hook.Org, c.hook.ID, opts)
	default:
		list, resp, err = c.gh.Apps.ListHookDeliveries(ctx, opts)
	}
	if err != nil {
		return providers.Page[providers.HookDelivery]{}, classify(op, resp, err)
	}
	page := providers.Page[providers.HookDelivery]{Items: make([]providers.HookDelivery, 0, len(list))}
	for _, d := range list {
		if d.GetGUID() == "" || d.GetID() == 0 {
			return providers.Page[providers.HookDelivery]{}, providers.Malformed(op, "a delivery without id or guid")
		}
		page.Items = append(page.Items, providers.HookDelivery{
			ID: d.GetID(), GUID: d.GetGUID(), DeliveredAt: d.GetDeliveredAt().Time, Redelivery: d.GetRedelivery(),
			StatusCode: d.GetStatusCode(), Status: d.GetStatus(), Event: d.GetEvent(), Action: d.GetAction(),
		})
	}
	if resp != nil && resp.Cursor != "" {
		page.HasMore, page.NextCursor = true, resp.Cursor
	}
	return page, nil
}

// GetDelivery reads one attempt's request: its headers and JSON payload.
func (c *HookClient) GetDelivery(ctx context.Context, id int64) (providers.HookRequest, error) {
	op := fmt.Sprintf("get delivery %d of %s", id, c.hook.String())
	var d *github.HookDelivery
	var resp *github.Response
	var err error
	switch c.hook.Scope {
	case HookRepo:
		d, resp, err = c.gh.Repositories.GetHookDelivery(ctx, c.hook.Owner, c.hook.Repo, c.hook.ID, id)
	case HookOrg:
		d, resp, err = c.gh.Organizations.GetHookDelivery(ctx, c.hook.Org, c.hook.ID, id)
	default:
		d, resp, err = c.gh.Apps.GetHookDelivery(ctx, id)
	}
	if err != nil {
		return providers.HookRequest{}, classify(op, resp, err)
	}
	if d.Request == nil || d.Request.RawPayload == nil || len(*d.Request.RawPayload) == 0 {
		return providers.HookRequest{}, providers.Malformed(op, "the delivery has no request payload")
	}
	payload := *d.Request.RawPayload
	if !json.Valid(payload) {
		return providers.HookRequest{}, providers.Malformed(op, "the request payload is not JSON")
	}
	h := http.Header{}
	for k, v := range d.Request.Headers {
		h.Set(k, v)
	}
	// The log's headers normally carry these; the attempt itself is the
	// authority when they do not.
	if h.Get("X-GitHub-Delivery") == "" {
		h.Set("X-GitHub-Delivery", d.GetGUID())
	}
	if h.Get("X-GitHub-Event") == "" && d.GetEvent() != "" {
		h.Set("X-GitHub-Event", d.GetEvent())
	}
	// The payload is JSON whatever the hook's content type was.
	h.Set("Content-Type", "application/json")
	return providers.HookRequest{Header: h, Payload: payload}, nil
}

// Redeliver asks GitHub to send an attempt's delivery again (202 Accepted:
// GitHub sends it asynchronously, with the same X-GitHub-Delivery).
func (c *HookClient) Redeliver(ctx context.Context, id int64) error {
	op := fmt.Sprintf("redeliver delivery %d of %s", id, c.hook.String())
	var resp *github.Response
	var err error
	switch c.hook.Scope {
	case HookRepo:
		_, resp, err = c.gh.Repositories.RedeliverHookDelivery(ctx, c.hook.Owner, c.hook.Repo, c.hook.ID, id)
	case HookOrg:
		_, resp, err = c.gh.Organizations.RedeliverHookDelivery(ctx, c.hook.Org, c.hook.ID, id)
	default:
		_, resp, err = c.gh.Apps.RedeliverHookDelivery(ctx, id)
	}
	var accepted *github.AcceptedError
	if err == nil || errors.As(err, &accepted) {
		return nil
	}
	return classify(op, resp, err)
}

// classify turns a go-github error into a *providers.Error: 404 NotFound;
// the primary rate limit (403 with no requests remaining), the secondary
// one and 429 Retryable after GitHub's delay; 5xx and transport errors
// Retryable; other 4xx Permanent.
func classify(op string, resp *github.Response, err error) error {
	e := &providers.Error{Op: op, Err: err}
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	switch {
	case errors.As(err, &rate):
		e.Kind, e.Code, e.Message = providers.ErrRetryable, "rate_limit", rate.Message
		if rate.Response != nil {
			e.StatusCode = rate.Response.StatusCode
		}
		if !rate.Rate.Reset.IsZero() {
			e.RetryAfter, e.HasRetryAfter = max(time.Until(rate.Rate.Reset.Time), time.Second), true
		}
	case errors.As(err, &abuse):
		e.Kind, e.Code, e.Message = providers.ErrRetryable, "secondary_rate_limit", abuse.Message
		if abuse.Response != nil {
			e.StatusCode = abuse.Response.StatusCode
		}
		if abuse.RetryAfter != nil {
			e.RetryAfter, e.HasRetryAfter = max(*abuse.RetryAfter, time.Second), true
		}
	case errors.As(err, &er) && er.Response != nil:
		e.StatusCode, e.Message = er.Response.StatusCode, er.Message
		e.Kind = providers.KindForStatus(e.StatusCode)
		e.RetryAfter, e.HasRetryAfter = providers.ParseRetryAfter(er.Response.Header.Get("Retry-After"), time.Now())
	case resp != nil && resp.Response != nil && resp.StatusCode >= 300:
		e.StatusCode, e.Kind = resp.StatusCode, providers.KindForStatus(resp.StatusCode)
	default:
		// No answer: a timeout, a refused connection, a cancelled context.
		e.Kind = providers.ErrRetryable
		var perr *json.SyntaxError
		if errors.As(err, &perr) {
			e.Kind, e.Message = providers.ErrPermanent, "malformed answer: "+err.Error()
		}
	}
	return e
}

// appTransport authenticates as a GitHub App: a JWT (RS256, issuer the App
// id, valid ten minutes) signed with the App's private key, renewed a minute
// before it expires.
type appTransport struct {
	base  http.RoundTripper
	appID int64
	key   *rsa.PrivateKey

	mu      sync.Mutex
	token   string
	expires time.Time
}

func (t *appTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.jwt(time.Now())
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

func (t *appTransport) jwt(now time.Time) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && now.Before(t.expires.Add(-time.Minute)) {
		return t.token, nil
	}
	tok, exp, err := AppJWT(t.appID, t.key, now)
	if err != nil {
		return "", err
	}
	t.token, t.expires = tok, exp
	return tok, nil
}

// AppJWT is the JWT that authenticates GitHub App appID at now: issued a
// minute in the past (clock drift), expiring nine minutes later.
func AppJWT(appID int64, key *rsa.PrivateKey, now time.Time) (string, time.Time, error) {
	iat, exp := now.Add(-time.Minute), now.Add(9*time.Minute)
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims, err := json.Marshal(map[string]any{"iat": iat.Unix(), "exp": exp.Unix(), "iss": strconv.FormatInt(appID, 10)})
	if err != nil {
		return "", time.Time{}, err
	}
	signing := header + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign the App's JWT: %w", err)
	}
	return signing + "." + enc.EncodeToString(sig), exp, nil
}

func parsePrivateKey(s string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("github App hook: the API key must be the App's PEM private key")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("github App hook: private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("github App hook: the private key is not RSA")
	}
	return rk, nil
}
