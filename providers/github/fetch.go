package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v72/github"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/providers"
)

// This file is GitHub's object client: Event.Fetch's current issue, pull
// request, check suite or workflow run (providers.ObjectFetcher), through
// go-github, with the endpoint's token or a GitHub App's installation token.

// Client fetches GitHub objects for one endpoint. Its go-github client
// remembers the rate limit GitHub last reported, so a call made while the
// budget is spent waits for the reset instead of asking (and spending).
type Client struct {
	gh  *github.Client
	own string
	// app mints installation tokens when the endpoint's API key is a
	// GitHub App's private key (nil for a token).
	app *installations
	// MaxRateLimitWait caps how long one call waits for a rate limit's
	// reset before it returns a retryable error carrying the wait
	// (default a minute; the call's own deadline caps it too).
	MaxRateLimitWait time.Duration
}

var (
	_ providers.Clients       = Provider{}
	_ providers.Client        = (*Client)(nil)
	_ providers.ObjectFetcher = (*Client)(nil)
)

// NewClient is the endpoint's object client. The API key is a
// fine-grained (or classic) token with read access to the repositories'
// issues, pull requests, checks and actions; or, with the endpoint's
// GitHub App id set (--github-app-id), the App's PEM private key, from
// which an installation token is minted for each event's installation (its
// source account) and renewed before it expires. The key is sealed at rest
// like every secret and never leaves the client.
func (Provider) NewClient(cfg providers.ClientConfig) (providers.Client, error) {
	return NewClient(cfg, nil)
}

// NewClient builds a Client for cfg; hc defaults to a client with a 30 s
// timeout.
func NewClient(cfg providers.ClientConfig, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	base, err := baseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{own: cfg.OwnAccount, MaxRateLimitWait: time.Minute}
	if cfg.Settings.GitHubAppID > 0 && strings.Contains(cfg.APIKey, "PRIVATE KEY") {
		key, err := parsePrivateKey(cfg.APIKey)
		if err != nil {
			return nil, err
		}
		jc := *hc
		rt := jc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		jc.Transport = &appTransport{base: rt, appID: cfg.Settings.GitHubAppID, key: key}
		asApp := github.NewClient(&jc)
		asApp.BaseURL = base
		c.app = &installations{app: asApp, tokens: map[int64]installationToken{}}
		ic := *hc
		ic.Transport = &installationTransport{base: rt}
		c.gh = github.NewClient(&ic)
	} else {
		c.gh = github.NewClient(hc).WithAuthToken(cfg.APIKey)
	}
	c.gh.BaseURL = base
	return c, nil
}

func baseURL(s string) (*url.URL, error) {
	if s == "" {
		s = "https://api.github.com/"
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("github API base URL: %w", err)
	}
	return u, nil
}

// objectPaths are the REST paths of the kinds Event.Fetch serves, by the
// resource kind Normalize gives their events.
var objectPaths = map[string]string{
	KindIssue:       "issues/",
	KindPullRequest: "pulls/",
	KindCheckSuite:  "check-suites/",
	KindWorkflowRun: "actions/runs/",
}

// ParseObjectID splits a resource id of Normalize's: OWNER/REPO#N (an
// issue, a pull request, a discussion) or OWNER/REPO/ID (a check suite, a
// workflow run, a release, a deployment).
func ParseObjectID(id string) (owner, repo string, n int64, err error) {
	rest, num, ok := strings.Cut(id, "#")
	if !ok {
		i := strings.LastIndex(id, "/")
		if i < 0 {
			return "", "", 0, fmt.Errorf("github object %q: not OWNER/REPO#N or OWNER/REPO/ID", id)
		}
		rest, num = id[:i], id[i+1:]
	}
	owner, repo, ok = strings.Cut(rest, "/")
	n, perr := strconv.ParseInt(num, 10, 64)
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") || perr != nil || n <= 0 {
		return "", "", 0, fmt.Errorf("github object %q: not OWNER/REPO#N or OWNER/REPO/ID", id)
	}
	return owner, repo, n, nil
}

// FetchObject returns the current issue, pull request, check suite or
// workflow run (kind and id as Normalize gives them) of installation
// account, as GitHub's REST API answers it. The answer must be that object
// (its number or id). Other kinds are permanent errors.
func (c *Client) FetchObject(ctx context.Context, account, kind, id string) (json.RawMessage, error) {
	op := "fetch " + kind + " " + id
	path, ok := objectPaths[kind]
	if !ok {
		return nil, &providers.Error{Op: op, Kind: providers.ErrPermanent,
			Message: fmt.Sprintf("hookinbox fetches GitHub issues, pull requests, check suites and workflow runs, not %q", kind)}
	}
	owner, repo, n, err := ParseObjectID(id)
	if err != nil {
		return nil, &providers.Error{Op: op, Kind: providers.ErrPermanent, Message: err.Error()}
	}
	ctx, err = c.withInstallation(ctx, op, account)
	if err != nil {
		return nil, err
	}
	u := fmt.Sprintf("repos/%s/%s/%s%d", url.PathEscape(owner), url.PathEscape(repo), path, n)
	var raw json.RawMessage
	if err := c.get(ctx, op, u, &raw); err != nil {
		return nil, err
	}
	field := "id"
	if kind == KindIssue || kind == KindPullRequest {
		field = "number"
	}
	if got := gjson.GetBytes(raw, field); got.Int() != n {
		return nil, &providers.Error{Op: op, Kind: providers.ErrPermanent,
			Message: fmt.Sprintf("GitHub answered another object (%s %s)", field, got.Raw)}
	}
	return raw, nil
}

// get GETs u into v. A rate limit (a 403 or 429 with GitHub's rate-limit
// headers, or one go-github already knows is spent, which it answers
// without asking) is waited out when its reset comes within
// MaxRateLimitWait and before ctx's deadline, then asked once more; the
// wait spends neither a request nor an attempt of the event. A longer one
// is a retryable error carrying the wait (the retry waits at least that).
func (c *Client) get(ctx context.Context, op, u string, v any) error {
	for try := 0; ; try++ {
		req, err := c.gh.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return &providers.Error{Op: op, Kind: providers.ErrPermanent, Message: err.Error()}
		}
		resp, err := c.gh.Do(ctx, req, v)
		if err == nil {
			return nil
		}
		perr := classify(op, resp, err)
		wait, limited := rateLimitWait(err)
		if !limited || try > 0 || !c.canWait(ctx, wait) {
			return perr
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return perr
		case <-t.C:
		}
	}
}

// rateLimitWait is how long a rate-limit error says to wait.
func rateLimitWait(err error) (time.Duration, bool) {
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	switch {
	case errors.As(err, &rate):
		return max(time.Until(rate.Rate.Reset.Time)+time.Second, time.Second), true
	case errors.As(err, &abuse):
		return max(abuse.GetRetryAfter(), time.Second), true
	}
	return 0, false
}

func (c *Client) canWait(ctx context.Context, wait time.Duration) bool {
	limit := c.MaxRateLimitWait
	if limit <= 0 {
		limit = time.Minute
	}
	if wait > limit {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait+5*time.Second {
		return false
	}
	return true
}

// OwnAccount is the endpoint's own source account: GitHub has no "who am
// I" for a fine-grained token that names an installation.
func (c *Client) OwnAccount(context.Context) (string, error) {
	if c.own == "" {
		return "", fmt.Errorf("%w: a GitHub endpoint's own account is its --account", providers.ErrNoClient)
	}
	return c.own, nil
}

func notGitHub(what string) error {
	return &providers.Error{Op: "fetch " + what, Kind: providers.ErrPermanent,
		Message: "GitHub has no " + what + "s", Err: providers.ErrNoClient}
}

// FetchInvoice is a permanent error: GitHub has no invoices.
func (c *Client) FetchInvoice(context.Context, string, string) (providers.Invoice, error) {
	return providers.Invoice{}, notGitHub("invoice")
}

// FetchSubscription is a permanent error: GitHub has no subscriptions.
func (c *Client) FetchSubscription(context.Context, string, string) (providers.Subscription, error) {
	return providers.Subscription{}, notGitHub("subscription")
}

// FetchCreditNote is a permanent error: GitHub has no credit notes.
func (c *Client) FetchCreditNote(context.Context, string, string) (providers.CreditNote, error) {
	return providers.CreditNote{}, notGitHub("credit note")
}

// ListSubscriptions is a permanent error: GitHub has no subscriptions.
func (c *Client) ListSubscriptions(context.Context, string, providers.ListQuery) (providers.Page[providers.Subscription], error) {
	return providers.Page[providers.Subscription]{}, notGitHub("subscription")
}

// ListEvents is a permanent error: GitHub's missed deliveries come back
// from the hook's delivery log (NewHookClient), not an events list.
func (c *Client) ListEvents(context.Context, string, providers.EventQuery) (providers.Page[providers.Event], error) {
	return providers.Page[providers.Event]{}, &providers.Error{Op: "list events", Kind: providers.ErrPermanent,
		Message: "GitHub's missed deliveries are in the hook's delivery log (recover-github)", Err: providers.ErrNoClient}
}

// installations mints and caches installation tokens (POST
// /app/installations/{id}/access_tokens, authenticated as the App),
// renewed five minutes before they expire.
type installations struct {
	app    *github.Client
	mu     sync.Mutex
	tokens map[int64]installationToken
}

type installationToken struct {
	token   string
	expires time.Time
}

type installationKey struct{}

// withInstallation authenticates the requests of ctx as the installation
// the event came from (its source account), minting its token first when
// it has none still valid; a token client needs nothing.
func (c *Client) withInstallation(ctx context.Context, op, account string) (context.Context, error) {
	if c.app == nil {
		return ctx, nil
	}
	id, err := strconv.ParseInt(account, 10, 64)
	if err != nil || id <= 0 {
		return ctx, &providers.Error{Op: op, Kind: providers.ErrPermanent,
			Message: fmt.Sprintf("a GitHub App fetches for an installation: the event's account %q is not an installation id", account)}
	}
	tok, err := c.app.token(ctx, id)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, installationKey{}, tok), nil
}

func (in *installations) token(ctx context.Context, id int64) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if t, ok := in.tokens[id]; ok && time.Until(t.expires) > 5*time.Minute {
		return t.token, nil
	}
	tok, resp, err := in.app.Apps.CreateInstallationToken(ctx, id, nil)
	if err != nil {
		return "", classify(fmt.Sprintf("mint an installation token of %d", id), resp, err)
	}
	t := installationToken{token: tok.GetToken(), expires: tok.GetExpiresAt().Time}
	if t.expires.IsZero() {
		t.expires = time.Now().Add(time.Hour)
	}
	in.tokens[id] = t
	return t.token, nil
}

// installationTransport authenticates each request with the installation
// token its context carries (withInstallation).
type installationTransport struct {
	base http.RoundTripper
}

func (t *installationTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, ok := r.Context().Value(installationKey{}).(string)
	if !ok {
		return nil, errors.New("github App client: the request names no installation")
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}
