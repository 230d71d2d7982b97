package stripe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stripe/stripe-go/v84"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/providers"
)

// objectPaths maps the resource kinds of Stripe events (the object's
// "object" field) to the API path that retrieves one by id.
var objectPaths = map[string]string{
	"invoice":                   "/v1/invoices/",
	"subscription":              "/v1/subscriptions/",
	"credit_note":               "/v1/credit_notes/",
	"customer":                  "/v1/customers/",
	"charge":                    "/v1/charges/",
	"refund":                    "/v1/refunds/",
	"payment_intent":            "/v1/payment_intents/",
	"setup_intent":              "/v1/setup_intents/",
	"checkout.session":          "/v1/checkout/sessions/",
	"product":                   "/v1/products/",
	"price":                     "/v1/prices/",
	"dispute":                   "/v1/disputes/",
	"payout":                    "/v1/payouts/",
	"subscription_schedule":     "/v1/subscription_schedules/",
	"billing_portal.session":    "/v1/billing_portal/sessions/",
	"invoiceitem":               "/v1/invoiceitems/",
	"payment_method":            "/v1/payment_methods/",
	"promotion_code":            "/v1/promotion_codes/",
	"coupon":                    "/v1/coupons/",
	"tax_rate":                  "/v1/tax_rates/",
	"transfer":                  "/v1/transfers/",
	"application_fee":           "/v1/application_fees/",
	"radar.early_fraud_warning": "/v1/radar/early_fraud_warnings/",
}

var _ providers.ObjectFetcher = (*Client)(nil)

// FetchObject retrieves the current state of a Stripe object by the kind
// its events name ("invoice", "checkout.session", …), for account (with
// Stripe-Account when it is not the client's own). The answer must be that
// object: same "object" and id.
func (c *Client) FetchObject(ctx context.Context, account, kind, id string) (json.RawMessage, error) {
	op := "fetch " + kind + " " + id
	path, ok := objectPaths[kind]
	switch {
	case !ok:
		return nil, &providers.Error{Op: op, Message: fmt.Sprintf("hookinbox has no Stripe API path for objects of kind %q", kind), Kind: providers.ErrPermanent}
	case strings.TrimSpace(id) == "":
		return nil, &providers.Error{Op: op, Message: "empty id", Kind: providers.ErrPermanent}
	}
	raw, ok := c.api.(stripe.RawRequestBackend)
	if !ok {
		return nil, &providers.Error{Op: op, Message: "the Stripe backend cannot make raw requests", Kind: providers.ErrPermanent}
	}
	var body []byte
	err := c.call(ctx, op, func(ctx context.Context) error {
		p := &stripe.RawParams{Params: stripe.Params{Context: ctx}}
		c.scope(&p.Params, account)
		if p.Params.StripeContext != nil {
			p.StripeContext = *p.Params.StripeContext
		}
		res, err := raw.RawRequest(http.MethodGet, path+url.PathEscape(id), c.key, "", p)
		if err != nil {
			return err
		}
		body = res.RawJSON
		return nil
	})
	if err != nil {
		return nil, err
	}
	doc := gjson.ParseBytes(body)
	if got := doc.Get("object").String(); got != kind || doc.Get("id").String() != id {
		return nil, malformed(op, fmt.Sprintf("answer is %s %q", got, doc.Get("id").String()))
	}
	return json.RawMessage(body), nil
}
