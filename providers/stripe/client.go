package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/form"

	"github.com/hookinbox/hookinbox/providers"
)

// ClientConfig points a Stripe client at an API.
type ClientConfig struct {
	// APIKey is the secret key (sk_…), sent as a Bearer token.
	APIKey string
	// BaseURL of the API; default https://api.stripe.com. The simulator's
	// address in tests and the demo.
	BaseURL string
	// PlatformAccount is the key owner's own account: calls for it (or for
	// account "") name no account. Calls for any other account send
	// Stripe-Account: <account> (Connect), or Stripe-Context: <account>
	// when it is a context path of several accounts (an organization's,
	// acct_…/acct_…), which only Stripe-Context can carry. The calls made for
	// a thin event (FetchEvent, FetchRelatedObject) always send its context
	// as Stripe-Context.
	PlatformAccount string
	// HTTPClient to use; default one with a 30 s timeout. Its transport is
	// wrapped to observe statuses and Retry-After.
	HTTPClient *http.Client
	// Now is the clock a Retry-After given as an HTTP date is counted
	// from (default time.Now; tests set a fixed one).
	Now func() time.Time
}

// Client is the providers.Client for Stripe, with stripe-go underneath and its own
// network retries off, so that a 429's Retry-After reaches the caller.
type Client struct {
	sc       *stripe.Client
	api      stripe.Backend
	key      string
	platform string
	now      func() time.Time
}

var (
	_ providers.Client     = (*Client)(nil)
	_ providers.ThinEvents = (*Client)(nil)
)

// NewClient builds a Stripe client.
func NewClient(cfg ClientConfig) *Client {
	hc := &http.Client{Timeout: 30 * time.Second}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = observingTransport{base: base}
	bc := &stripe.BackendConfig{
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		EnableTelemetry:   stripe.Bool(false),
	}
	if cfg.BaseURL != "" {
		bc.URL = stripe.String(cfg.BaseURL)
	}
	backends := stripe.NewBackendsWithConfig(bc)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Client{
		sc:       stripe.NewClient(cfg.APIKey, stripe.WithBackends(backends)),
		api:      backends.API,
		key:      cfg.APIKey,
		platform: cfg.PlatformAccount,
		now:      now,
	}
}

// scope sets how p names account (PlatformAccount's rule): nothing for the
// key's own, Stripe-Account for a connected account, Stripe-Context for a
// context path.
func (c *Client) scope(p *stripe.Params, account string) {
	switch {
	case account == "" || account == c.platform:
	case strings.Contains(account, "/"):
		p.StripeContext = stripe.String(account)
	default:
		p.StripeAccount = stripe.String(account)
	}
}

// contextOf is the Stripe-Context of a call made for a thin event of
// account: none for the key's own account.
func (c *Client) contextOf(account string) *string {
	if account == "" || account == c.platform {
		return nil
	}
	return stripe.String(account)
}

// OwnAccount retrieves the key's own account (GET /v1/account).
func (c *Client) OwnAccount(ctx context.Context) (string, error) {
	op := "retrieve own account"
	var acct *stripe.Account
	err := c.call(ctx, op, func(ctx context.Context) error {
		var err error
		acct, err = c.sc.V1Accounts.Retrieve(ctx, &stripe.AccountRetrieveParams{})
		return err
	})
	if err != nil {
		return "", err
	}
	if acct.ID == "" {
		return "", malformed(op, "answer has no account id")
	}
	return acct.ID, nil
}

// FetchInvoice retrieves an invoice.
func (c *Client) FetchInvoice(ctx context.Context, account, id string) (providers.Invoice, error) {
	op := "fetch invoice " + id
	if id == "" {
		return providers.Invoice{}, &providers.Error{Op: op, Message: "empty id", Kind: providers.ErrPermanent}
	}
	var inv *stripe.Invoice
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.InvoiceRetrieveParams{}
		c.scope(&p.Params, account)
		var err error
		inv, err = c.sc.V1Invoices.Retrieve(ctx, id, p)
		return err
	})
	if err != nil {
		return providers.Invoice{}, err
	}
	if inv.ID != id || inv.Object != "invoice" {
		return providers.Invoice{}, malformed(op, fmt.Sprintf("answer is %s %q", inv.Object, inv.ID))
	}
	return toInvoice(account, inv, inv.LastResponse.RawJSON), nil
}

// FetchSubscription retrieves a subscription.
func (c *Client) FetchSubscription(ctx context.Context, account, id string) (providers.Subscription, error) {
	op := "fetch subscription " + id
	if id == "" {
		return providers.Subscription{}, &providers.Error{Op: op, Message: "empty id", Kind: providers.ErrPermanent}
	}
	var sub *stripe.Subscription
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.SubscriptionRetrieveParams{}
		c.scope(&p.Params, account)
		var err error
		sub, err = c.sc.V1Subscriptions.Retrieve(ctx, id, p)
		return err
	})
	if err != nil {
		return providers.Subscription{}, err
	}
	if sub.ID != id || sub.Object != "subscription" {
		return providers.Subscription{}, malformed(op, fmt.Sprintf("answer is %s %q", sub.Object, sub.ID))
	}
	return toSubscription(account, sub, sub.LastResponse.RawJSON)
}

// FetchCreditNote retrieves a credit note (GET /v1/credit_notes/{id}).
func (c *Client) FetchCreditNote(ctx context.Context, account, id string) (providers.CreditNote, error) {
	op := "fetch credit note " + id
	if id == "" {
		return providers.CreditNote{}, &providers.Error{Op: op, Message: "empty id", Kind: providers.ErrPermanent}
	}
	var cn *stripe.CreditNote
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.CreditNoteRetrieveParams{}
		c.scope(&p.Params, account)
		var err error
		cn, err = c.sc.V1CreditNotes.Retrieve(ctx, id, p)
		return err
	})
	if err != nil {
		return providers.CreditNote{}, err
	}
	if cn.ID != id || cn.Object != "credit_note" {
		return providers.CreditNote{}, malformed(op, fmt.Sprintf("answer is %s %q", cn.Object, cn.ID))
	}
	if cn.Invoice == nil || cn.Invoice.ID == "" {
		return providers.CreditNote{}, malformed(op, "the credit note names no invoice")
	}
	return providers.CreditNote{
		ID: cn.ID, Account: account, Invoice: cn.Invoice.ID, Status: string(cn.Status), Total: cn.Total,
		Currency: string(cn.Currency), Livemode: cn.Livemode, Raw: cn.LastResponse.RawJSON,
	}, nil
}

// ListSubscriptions lists subscriptions of every status, newest first.
func (c *Client) ListSubscriptions(ctx context.Context, account string, q providers.ListQuery) (providers.Page[providers.Subscription], error) {
	op := "list subscriptions"
	var list stripe.SubscriptionList
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.SubscriptionListParams{Status: stripe.String("all")}
		c.listParams(ctx, &p.ListParams, account, q.Cursor, q.Limit)
		return c.list(ctx, "/v1/subscriptions", p, &p.ListParams, &list)
	})
	if err != nil {
		return providers.Page[providers.Subscription]{}, err
	}
	raws, err := rawItems(op, &list.APIResource, len(list.Data))
	if err != nil {
		return providers.Page[providers.Subscription]{}, err
	}
	out := providers.Page[providers.Subscription]{HasMore: list.HasMore, Items: make([]providers.Subscription, 0, len(list.Data))}
	for i, s := range list.Data {
		if s == nil || s.ID == "" {
			return providers.Page[providers.Subscription]{}, malformed(op, "item without id")
		}
		sub, err := toSubscription(account, s, raws[i])
		if err != nil {
			return providers.Page[providers.Subscription]{}, err
		}
		out.Items = append(out.Items, sub)
	}
	if out.HasMore && len(out.Items) > 0 {
		out.NextCursor = out.Items[len(out.Items)-1].ID
	}
	return out, nil
}

// ListEvents lists events newest first.
func (c *Client) ListEvents(ctx context.Context, account string, q providers.EventQuery) (providers.Page[providers.Event], error) {
	op := "list events"
	var list stripe.EventList
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.EventListParams{}
		c.listParams(ctx, &p.ListParams, account, q.Cursor, q.Limit)
		if !q.Since.IsZero() {
			p.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: q.Since.Unix()}
		}
		switch len(q.Types) {
		case 0:
		case 1:
			p.Type = stripe.String(q.Types[0])
		default:
			p.Types = stripe.StringSlice(q.Types)
		}
		return c.list(ctx, "/v1/events", p, &p.ListParams, &list)
	})
	if err != nil {
		return providers.Page[providers.Event]{}, err
	}
	raws, err := rawItems(op, &list.APIResource, len(list.Data))
	if err != nil {
		return providers.Page[providers.Event]{}, err
	}
	out := providers.Page[providers.Event]{HasMore: list.HasMore, Items: make([]providers.Event, 0, len(list.Data))}
	for i, e := range list.Data {
		if e == nil || e.ID == "" {
			return providers.Page[providers.Event]{}, malformed(op, "item without id")
		}
		acct := e.Account
		if acct == "" {
			acct = account
		}
		out.Items = append(out.Items, providers.Event{
			ID: e.ID, Type: string(e.Type), Account: acct, Created: time.Unix(e.Created, 0).UTC(), Raw: raws[i],
		})
	}
	if out.HasMore && len(out.Items) > 0 {
		out.NextCursor = out.Items[len(out.Items)-1].ID
	}
	return out, nil
}

// v2Event is a thin event as GET /v2/core/events/{id} answers it.
type v2Event struct {
	stripe.APIResource
	ID            string                           `json:"id"`
	Object        string                           `json:"object"`
	Type          string                           `json:"type"`
	Livemode      bool                             `json:"livemode"`
	Created       time.Time                        `json:"created"`
	Context       string                           `json:"context"`
	RelatedObject *stripe.V2CoreEventRelatedObject `json:"related_object"`
	SnapshotEvent string                           `json:"snapshot_event"`
	Data          json.RawMessage                  `json:"data"`
}

// FetchEvent retrieves a thin event (GET /v2/core/events/{id}) of account,
// its context, sent as Stripe-Context.
func (c *Client) FetchEvent(ctx context.Context, account, id string) (providers.ThinEvent, error) {
	op := "fetch event " + id
	if id == "" {
		return providers.ThinEvent{}, &providers.Error{Op: op, Message: "empty id", Kind: providers.ErrPermanent}
	}
	var ev v2Event
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.Params{Context: ctx, StripeContext: c.contextOf(account)}
		return c.api.Call(http.MethodGet, stripe.FormatURLPath("/v2/core/events/%s", id), c.key, p, &ev)
	})
	if err != nil {
		return providers.ThinEvent{}, err
	}
	if ev.ID != id || ev.Object != "v2.core.event" {
		return providers.ThinEvent{}, malformed(op, fmt.Sprintf("answer is %s %q", ev.Object, ev.ID))
	}
	if ev.Context != "" && account != "" && ev.Context != account {
		return providers.ThinEvent{}, malformed(op, fmt.Sprintf("the event's context is %s, not %s", ev.Context, account))
	}
	out := providers.ThinEvent{
		ID: ev.ID, Type: ev.Type, Context: ev.Context, Livemode: ev.Livemode, Created: ev.Created.UTC(),
		SnapshotEvent: ev.SnapshotEvent, Raw: ev.LastResponse.RawJSON,
	}
	if out.Context == "" && account != c.platform {
		out.Context = account
	}
	if len(ev.Data) > 0 && string(ev.Data) != "null" {
		out.Data = ev.Data
	}
	if ro := ev.RelatedObject; ro != nil {
		out.Related = &providers.RelatedObject{ID: ro.ID, Type: ro.Type, URL: ro.URL}
	}
	return out, nil
}

// FetchRelatedObject retrieves the current state of the object ev names
// (GET on its related_object.url, an API path of Stripe's), in ev's
// context (Stripe-Context), as Stripe-go's own FetchRelatedObject does. The
// answer must be that object: its id and object type.
func (c *Client) FetchRelatedObject(ctx context.Context, ev providers.ThinEvent) (json.RawMessage, error) {
	op := "fetch the object of event " + ev.ID
	ro := ev.Related
	if ro == nil {
		return nil, &providers.Error{Op: op, Message: "the event names no related object", Kind: providers.ErrPermanent}
	}
	if !apiPath(ro.URL) {
		return nil, &providers.Error{Op: op, Message: fmt.Sprintf("related object URL %q is not a Stripe API path", ro.URL), Kind: providers.ErrPermanent}
	}
	obj := &stripe.APIResource{}
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.Params{Context: ctx, StripeContext: c.contextOf(ev.Context), Headers: http.Header{}}
		p.Headers.Set("Stripe-Request-Trigger", "event="+ev.ID)
		return c.api.Call(http.MethodGet, ro.URL, c.key, p, obj)
	})
	if err != nil {
		return nil, err
	}
	if obj.LastResponse == nil {
		return nil, malformed(op, "no response recorded")
	}
	var got struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(obj.LastResponse.RawJSON, &got); err != nil {
		return nil, malformed(op, err.Error())
	}
	if got.ID != ro.ID || got.Object != ro.Type {
		return nil, malformed(op, fmt.Sprintf("answer is %s %q, the event names %s %q", got.Object, got.ID, ro.Type, ro.ID))
	}
	return obj.LastResponse.RawJSON, nil
}

// apiPath reports whether u is a plain path of Stripe's API (/v1/… or
// /v2/…): no scheme, host, query, fragment or dot segment, so the API key
// only ever goes to the client's own base URL.
func apiPath(u string) bool {
	if !strings.HasPrefix(u, "/v1/") && !strings.HasPrefix(u, "/v2/") {
		return false
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "" || parsed.Host != "" || parsed.RawQuery != "" || parsed.Fragment != "" ||
		strings.Contains(u, "//") || strings.Contains(u, `\`) {
		return false
	}
	for _, seg := range strings.Split(parsed.Path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return parsed.Path == u
}

func (c *Client) listParams(ctx context.Context, p *stripe.ListParams, account, cursor string, limit int) {
	p.Context = ctx
	var sp stripe.Params
	c.scope(&sp, account)
	p.StripeAccount, p.StripeContext = sp.StripeAccount, sp.StripeContext
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	p.Limit = stripe.Int64(int64(limit))
	if cursor != "" {
		p.StartingAfter = stripe.String(cursor)
	}
	p.Single = true
}

// list fetches one page the way stripe-go's own list services do (form
// values through CallRaw), keeping the page's has_more and raw body.
func (c *Client) list(ctx context.Context, path string, params any, lp *stripe.ListParams, dst stripe.LastResponseSetter) error {
	values := &form.Values{}
	form.AppendTo(values, params)
	p := lp.GetParams()
	p.Context = ctx
	return c.api.CallRaw(http.MethodGet, path, c.key, []byte(values.Encode()), p, dst)
}

// rawItems splits a list answer into each item's raw JSON.
func rawItems(op string, res *stripe.APIResource, n int) ([]json.RawMessage, error) {
	if res.LastResponse == nil {
		return nil, malformed(op, "no response recorded")
	}
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(res.LastResponse.RawJSON, &page); err != nil || len(page.Data) != n {
		return nil, malformed(op, "list items do not match")
	}
	return page.Data, nil
}

func toInvoice(account string, inv *stripe.Invoice, raw []byte) providers.Invoice {
	out := providers.Invoice{
		ID: inv.ID, Account: account, Status: string(inv.Status), Paid: inv.Status == stripe.InvoiceStatusPaid,
		AmountPaid: inv.AmountPaid, Total: inv.Total, Currency: string(inv.Currency), Livemode: inv.Livemode, Raw: raw,
	}
	if inv.Customer != nil {
		out.Customer = inv.Customer.ID
	}
	if p := inv.Parent; p != nil && p.SubscriptionDetails != nil && p.SubscriptionDetails.Subscription != nil {
		out.SubscriptionID = p.SubscriptionDetails.Subscription.ID
	}
	if out.SubscriptionID == "" {
		// Older API versions carried a top-level "subscription".
		var legacy struct {
			Subscription string `json:"subscription"`
		}
		if json.Unmarshal(raw, &legacy) == nil {
			out.SubscriptionID = legacy.Subscription
		}
	}
	return out
}

func toSubscription(account string, s *stripe.Subscription, raw []byte) (providers.Subscription, error) {
	out := providers.Subscription{
		ID: s.ID, Account: account, Status: string(s.Status), CancelAtPeriodEnd: s.CancelAtPeriodEnd,
		CanceledAt: unixTime(s.CanceledAt), EndedAt: unixTime(s.EndedAt), Livemode: s.Livemode, Raw: raw,
	}
	if s.Customer != nil {
		out.Customer = s.Customer.ID
	}
	// Since API version 2025-03-31 the current period lives on the items.
	if s.Items != nil {
		var end int64
		for _, it := range s.Items.Data {
			if it != nil {
				end = max(end, it.CurrentPeriodEnd)
			}
		}
		out.CurrentPeriodEnd = unixTime(end)
	}
	var v struct {
		Version *int64 `json:"version"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return providers.Subscription{}, malformed("subscription "+s.ID, err.Error())
	}
	if v.Version != nil {
		out.Version, out.HasVersion = *v.Version, true
	}
	return out, nil
}

func unixTime(u int64) time.Time {
	if u == 0 {
		return time.Time{}
	}
	return time.Unix(u, 0).UTC()
}

func malformed(op, msg string) error { return providers.Malformed(op, msg) }

// call runs one stripe-go request and maps its failure.
func (c *Client) call(ctx context.Context, op string, f func(context.Context) error) error {
	o := &observed{}
	err := f(context.WithValue(ctx, observedKey{}, o))
	if err == nil {
		return nil
	}
	return mapError(ctx, op, err, o, c.now())
}

// mapError maps a failed call; now dates an HTTP-date Retry-After.
func mapError(ctx context.Context, op string, err error, o *observed, now time.Time) error {
	e := &providers.Error{Op: op, Err: err}
	var se *stripe.Error
	var v2 *stripe.V2RawError
	switch {
	case errors.As(err, &se) && se.HTTPStatusCode != 0:
		e.StatusCode, e.Code, e.Message = se.HTTPStatusCode, string(se.Code), se.Msg
	case errors.As(err, &v2) && v2.HTTPStatusCode != 0:
		// The /v2 API's error shape.
		e.StatusCode, e.Code, e.Message = v2.HTTPStatusCode, v2.Code, v2.Message
	case o.status != 0:
		// An answer stripe-go could not read as a Stripe error (a proxy's
		// HTML 502, a 2xx with a broken body…).
		e.StatusCode = o.status
	}
	switch {
	case e.StatusCode >= 400:
		e.Kind = providers.KindForStatus(e.StatusCode)
	case e.StatusCode != 0:
		e.Kind = providers.ErrPermanent // a success answer that could not be parsed
	case o.roundTrips > 0 || ctx.Err() != nil:
		e.Kind = providers.ErrRetryable // no answer: connection error or timeout
	default:
		e.Kind = providers.ErrPermanent // the request could not even be built
	}
	if o.header != nil {
		e.RetryAfter, e.HasRetryAfter = providers.ParseRetryAfter(o.header.Get("Retry-After"), now)
	}
	return e
}

type observedKey struct{}

// observed records what the last round trip of one call saw.
type observed struct {
	roundTrips int
	status     int
	header     http.Header
}

type observingTransport struct{ base http.RoundTripper }

// RoundTrip records the answer's status and headers for mapError.
func (t observingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if o, ok := req.Context().Value(observedKey{}).(*observed); ok {
		o.roundTrips++
		if resp != nil {
			o.status, o.header = resp.StatusCode, resp.Header.Clone()
		}
	}
	return resp, err
}

// SubscriptionFromEvent reads the subscription snapshot a Stripe event
// carries in data.object (customer.subscription.* events), parsed as a
// fetched one would be. Use it only when the snapshot is authoritative for
// its version; otherwise fetch the current state.
func SubscriptionFromEvent(account string, event []byte) (providers.Subscription, error) {
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(event, &ev); err != nil || len(ev.Data.Object) == 0 {
		return providers.Subscription{}, malformed("subscription snapshot", "event has no data.object")
	}
	var s stripe.Subscription
	if err := json.Unmarshal(ev.Data.Object, &s); err != nil {
		return providers.Subscription{}, malformed("subscription snapshot", err.Error())
	}
	if s.ID == "" || s.Object != "subscription" {
		return providers.Subscription{}, malformed("subscription snapshot", "data.object is not a subscription")
	}
	return toSubscription(account, &s, ev.Data.Object)
}
