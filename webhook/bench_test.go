package webhook_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers/providertest"
	hwebhook "github.com/hookinbox/hookinbox/webhook"
)

// nopHandoff takes the doorbells and drops them: the benchmark measures
// the intake, not Temporal.
type nopHandoff struct{}

func (nopHandoff) Notify(keys.Resource, keys.Event) {}

// invoiceLines pads a Stripe invoice.paid event to the size class of
// Stripe's own (about 1.3 KB), as the lab's intake bench sends.
var invoiceLines = `"account_country":"US","account_name":"Bench Inc.","amount_due":2000,"amount_paid":2000,` +
	`"billing_reason":"subscription_cycle","collection_method":"charge_automatically","currency":"usd",` +
	`"customer":"cus_Rb3nch0000000","customer_email":"billing@example.com","customer_name":"Example Customer",` +
	`"lines":{"object":"list","data":[{"id":"il_1","object":"line_item","amount":2000,"currency":"usd",` +
	`"description":"1 × Pro plan (at $20.00 / month)","period":{"end":1760000000,"start":1760000000},` +
	`"pricing":{"price_details":{"price":"price_1Pro","product":"prod_Pro"},"type":"price_details"},` +
	`"quantity":1}],"has_more":false,"total_count":1,"url":"/v1/invoices/in_1/lines"},` +
	`"number":"BENCH-0001","paid":true,"status":"paid","subtotal":2000,"total":2000,` + strings.Repeat(" ", 300)

// BenchmarkReceive is one Stripe-signed invoice.paid delivery through the
// intake's handler (gin, the endpoint cache, verification, normalization,
// group commit on a real PostgreSQL, hand-off, answer, metrics and the log
// line), in process, without a network: what the intake itself costs per
// request. Read it with -benchmem, or -cpuprofile. PostgreSQL is the tests'
// (fsync off): the commit's flush is not what this measures.
//
//	go test ./webhook -run '^$' -bench Receive -benchmem
func BenchmarkReceive(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL: run without -short")
	}
	s := testenv.Store(b)
	ctx := context.Background()
	if err := endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: "stripe", Provider: "stripe", Environment: "test",
		Secrets: []string{stripeSecret}}); err != nil {
		b.Fatal(err)
	}
	if err := endpoints.LinkAccount(ctx, s, "stripe", "acct_own", "ws_1"); err != nil {
		b.Fatal(err)
	}
	srv := hwebhook.New(hwebhook.Options{Routes: routestest.Builtin(), Store: s, Handoff: nopHandoff{}, Metrics: metrics.New(),
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
		MaxBodyBytes: 1 << 20, Tolerance: 5 * time.Minute, CacheTTL: 10 * time.Second, InboxWriters: 4})
	h := srv.Handler()
	type delivery struct {
		body []byte
		sig  string
	}
	deliveries := make([]delivery, b.N+1)
	now := time.Now()
	for i := range deliveries {
		n := strconv.Itoa(i)
		body := providertest.StripeEvent("evt_bench_"+n, "invoice.paid", "in_bench_"+n, "invoice", invoiceLines)
		deliveries[i] = delivery{body, providertest.StripeHeaders(body, stripeSecret, now)["Stripe-Signature"]}
	}
	post := func(d delivery) {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(d.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Stripe-Signature", d.sig)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"accepted"`) {
			b.Fatalf("intake answered %d %s", w.Code, w.Body.String())
		}
	}
	post(deliveries[b.N]) // the endpoint cache is warm, as under load
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		post(deliveries[i])
	}
}
