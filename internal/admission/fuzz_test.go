package admission

// FuzzDerive runs the pure derivation step (shared by the intake, the
// quarantine's re-admission and the backfill) without a database. Its seeds
// and every input that ever exposed a bug live in testdata/fuzz/FuzzDerive
// and run in every `go test ./admission`; explore with
//
//	go test ./admission -run '^$' -fuzz '^FuzzDerive$' -fuzztime 30000x
//
// The intake's end-to-end fuzz targets (signatures, signed bodies through
// the HTTP handler and PostgreSQL) are in package webhook.

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// fuzzEndpoints are the webhook fuzz harness's endpoints (same slugs,
// settings and links), so the corpus means the same in both packages.
var fuzzEndpoints = map[string]*endpoints.Endpoint{
	"fz-stripe": {Slug: "fz-stripe", Provider: "stripe", Environment: "test", Links: map[string]string{"acct_own": "ws_own"}},
	"fz-connect": {Slug: "fz-connect", Provider: "stripe", Environment: "live", Account: "acct_platform",
		Links:    map[string]string{"acct_c1": "ws_c1", "acct_platform": "ws_platform"},
		Settings: keys.EndpointSettings{VersionPath: "data.object.version"}},
	"fz-gh": {Slug: "fz-gh", Provider: "github", Environment: "live", Links: map[string]string{"4242": "ws_gh", "octo-org": "ws_org"}},
	"fz-feedback": {Slug: "fz-feedback", Provider: "standard", Environment: "live", Links: map[string]string{"proj_1": "ws_fb"},
		Settings: keys.EndpointSettings{AccountPath: "data.project_id"}},
	"fz-std": {Slug: "fz-std", Provider: "standard", Environment: "test", Account: "acct_std", Links: map[string]string{"acct_std": "ws_std"},
		Settings: keys.EndpointSettings{TypePath: "event.type", ResourcePath: "event.object.id", ResourceKind: "thing",
			VersionPath: "event.object.seq"}},
	"fz-shop": {Slug: "fz-shop", Provider: "shopify", Environment: "live", Links: map[string]string{"demo.myshopify.com": "ws_shop"}},
}

// fuzzRoutes are the webhook harness's signed routes, in its order: the
// input's route byte picks one.
var fuzzRoutes = []string{"stripe", "connect", "github-json", "github-form", "feedback", "standard-paths", "shopify"}

// fuzzDelivery is what the route's delivery of body carries (its
// signature headers do not matter to derivation).
func fuzzDelivery(route string, body []byte, id, typ string) (slug string, h http.Header, raw []byte) {
	h = http.Header{"Content-Type": {"application/json"}}
	switch route {
	case "stripe":
		return "fz-stripe", h, body
	case "connect":
		return "fz-connect", h, body
	case "github-json", "github-form":
		if route == "github-form" {
			body = []byte("payload=" + url.QueryEscape(string(body)))
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		setIf(h, "X-GitHub-Delivery", id)
		setIf(h, "X-GitHub-Event", typ)
		return "fz-gh", h, body
	case "feedback", "standard-paths":
		if id == "" {
			id = "msg_empty" // without a webhook-id nothing is signed
		}
		h.Set("webhook-id", id)
		return map[string]string{"feedback": "fz-feedback", "standard-paths": "fz-std"}[route], h, body
	default: // shopify
		setIf(h, "X-Shopify-Event-Id", id)
		setIf(h, "X-Shopify-Topic", typ)
		h.Set("X-Shopify-Shop-Domain", "demo.myshopify.com")
		return "fz-shop", h, body
	}
}

func setIf(h http.Header, k, v string) {
	if v != "" {
		h.Set(k, v)
	}
}

// headerValue makes s what a header value can be on the wire: Go's HTTP
// server refuses control characters and trims surrounding blanks, but
// passes other bytes (obs-text, so not necessarily UTF-8) through.
func headerValue(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c >= 0x20 || c == '\t') && c != 0x7f {
			b = append(b, c)
		}
	}
	return strings.Trim(string(b), " \t")
}

func stripeBody(id, typ, objID, objKind string, live bool, extra string) []byte {
	return []byte(`{"id":"` + id + `","object":"event","type":"` + typ + `","livemode":` + strconv.FormatBool(live) +
		`,"created":1760000000,` + extra + `"data":{"object":{"id":"` + objID + `","object":"` + objKind + `"}}}`)
}

// FuzzDerive: no panic, and an event derive accepts has every key part,
// fits the columns (255 bytes) and can be stored in PostgreSQL text columns
// (valid UTF-8 without NUL), with status pending exactly when a handler
// takes its type.
func FuzzDerive(f *testing.F) {
	f.Add(uint8(0), stripeBody("evt_d_1", "invoice.paid", "in_1", "invoice", false, ""), "", "")
	f.Add(uint8(1), stripeBody("evt_d_2", "customer.subscription.deleted", "sub_1", "subscription", true, `"account":"acct_c1",`), "", "")
	f.Add(uint8(2), []byte(`{"action":"closed","installation":{"id":4242},"repository":{"full_name":"octo/hello"}}`), "d-1", "pull_request")
	f.Add(uint8(4), []byte(`{"type":"feedback.created","data":{"id":"fb_1","project_id":"proj_1"}}`), "msg_1", "")
	f.Add(uint8(5), []byte(`{"event":{"type":"thing.changed","object":{"id":"th_1","seq":3.5}}}`), "msg_2", "")
	f.Add(uint8(6), []byte(`{"id":1,"email":"a@b.c"}`), "e-1", "customers/create")
	eps := map[string]*Endpoint{}
	for slug, ep := range fuzzEndpoints {
		eps[slug] = NewEndpoint(ep)
	}
	rt := routestest.Builtin()
	f.Fuzz(func(t *testing.T, route uint8, body []byte, idHeader, typeHeader string) {
		slug, h, raw := fuzzDelivery(fuzzRoutes[int(route)%len(fuzzRoutes)], body, headerValue(idHeader), headerValue(typeHeader))
		ep := eps[slug]
		payload, err := providers.Payload(ep.provider, h, raw)
		if err != nil {
			return // the verifier refuses it before derivation
		}
		ev, err := derive(rt, ep.Endpoint, ep.provider, h, payload, raw, 0, "")
		if ev == nil {
			t.Fatal("derive returned no event")
		}
		if err != nil {
			var rej *Rejection
			if !errors.As(err, &rej) {
				t.Fatalf("derive failed without a rejection: %v", err)
			}
			return
		}
		for name, v := range map[string]string{"account": ev.Key.Account, "event_id": ev.Key.EventID,
			"environment": ev.Key.Environment, "workspace": ev.WorkspaceID, "event_type": ev.EventType,
			"resource_kind": ev.ResourceKind, "resource_id": ev.ResourceID} {
			if v == "" {
				t.Fatalf("derived event has an empty %s", name)
			}
			if len(v) > 255 && name != "resource_kind" {
				t.Fatalf("derived %s is %d bytes", name, len(v))
			}
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				t.Fatalf("derived %s %q cannot be stored in a PostgreSQL text column (invalid UTF-8 or NUL)", name, v)
			}
		}
		if !ev.Resource().Valid() {
			t.Fatalf("derived resource %+v is incomplete", ev.Resource())
		}
		p, _ := providers.Lookup(ev.Key.Provider)
		_, handled := rt.Route(ev.Key.Provider, providers.RouteType(p, ev.EventType))
		if handled != (ev.Status == keys.StatusPending) {
			t.Fatalf("status %s for type %q (handled: %v)", ev.Status, ev.EventType, handled)
		}
	})
}
