package webhook_test

// Fuzz targets of the intake: the real gin handler in front of a real
// PostgreSQL (a fresh migrated database per fuzz process), called through
// Handler().ServeHTTP. Each iteration checks the intake's promises:
//
//   - no panic and no 5xx (the database is up, so 503 is a bug too);
//   - an unauthenticated request stores nothing: no inbox row, no
//     quarantine row, no hand-off (row ids are read before and after);
//   - whatever is stored is consistent: every key part set, the exact raw
//     bytes and their hash, the verified secret, the linked workspace, a
//     valid resource handed off for a pending row, no signature header kept.
//
// Authenticity is judged by an oracle written here from each provider's
// published scheme, not by the verifier under test. The fuzzer cannot forge
// an HMAC, so signature strings may contain the placeholder {sig} (and {t}
// for the timestamp), which the harness replaces with a genuine signature of
// the body by the secret the input selects: registered, or not.
//
// Seeds live in testdata/fuzz/<FuzzName>/ and run as unit tests in
// `go test ./webhook` (the pure derivation step's target, FuzzDerive, is in
// package admission); explore with, for example,
//
//	go test ./webhook -run '^$' -fuzz '^FuzzStripeSignature$' -fuzztime 90s
//
// Each fuzz worker process starts its own PostgreSQL cluster unless
// HOOKINBOX_TEST_DATABASE_URL points them at a shared one (much faster).
// Every input that ever exposed a bug is kept beside the seeds, so it runs
// in every `go test` (the first session found signed deliveries whose ids
// held NUL or invalid UTF-8, or whose time was out of PostgreSQL's range:
// the insert failed and the intake answered 503 for good).

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/routes/routestest"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers"
	hwebhook "github.com/hookinbox/hookinbox/webhook"
)

const fuzzTolerance = 5 * time.Minute

// Secrets of the fuzz endpoints: two registered per endpoint (a rotation),
// and secrets the intake does not know, for the harness to sign with.
var (
	fzStripe   = []string{"whsec_fz_stripe_one", "whsec_fz_stripe_two"}
	fzGitHub   = []string{"fz-github-one", "fz-github-two"}
	fzShopify  = []string{"shpss_fz_one", "shpss_fz_two"}
	fzStandard = []string{
		"whsec_" + base64.StdEncoding.EncodeToString([]byte("fuzz-standard-secret-number-one!")),
		"whsec_" + base64.StdEncoding.EncodeToString([]byte("fuzz-standard-secret-number-two!")),
	}
	fzUnknownPlain    = []string{"whsec_not_registered", ""}
	fzUnknownStandard = []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("not-a-registered-standard-secret"))}
)

// fuzzEndpoint is one registered endpoint and what the checks need of it.
type fuzzEndpoint struct {
	slug, provider, environment string
	own                         string // the endpoint's own account, if any
	links                       map[string]string
	settings                    keys.EndpointSettings
	secrets                     []string
}

var fuzzEndpoints = []fuzzEndpoint{
	{slug: "fz-stripe", provider: "stripe", environment: "test", secrets: fzStripe,
		links: map[string]string{"acct_own": "ws_own"}},
	{slug: "fz-connect", provider: "stripe", environment: "live", own: "acct_platform", secrets: fzStripe,
		links:    map[string]string{"acct_c1": "ws_c1", "acct_platform": "ws_platform"},
		settings: keys.EndpointSettings{VersionPath: "data.object.version"}},
	{slug: "fz-gh", provider: "github", environment: "live", secrets: fzGitHub,
		links: map[string]string{"4242": "ws_gh", "octo-org": "ws_org"}},
	{slug: "fz-feedback", provider: "standard", environment: "live", secrets: fzStandard,
		links: map[string]string{"proj_1": "ws_fb"}, settings: keys.EndpointSettings{AccountPath: "data.project_id"}},
	{slug: "fz-std", provider: "standard", environment: "test", own: "acct_std", secrets: fzStandard,
		links: map[string]string{"acct_std": "ws_std"},
		settings: keys.EndpointSettings{TypePath: "event.type", ResourcePath: "event.object.id", ResourceKind: "thing",
			VersionPath: "event.object.seq"}},
	{slug: "fz-shop", provider: "shopify", environment: "live", secrets: fzShopify,
		links: map[string]string{"demo.myshopify.com": "ws_shop"}},
}

func endpointBySlug(slug string) fuzzEndpoint {
	for _, e := range fuzzEndpoints {
		if e.slug == slug {
			return e
		}
	}
	panic("no fuzz endpoint " + slug)
}

// take returns the hand-offs recorded since the last take: those of one
// fuzz iteration.
func (h *recordingHandoff) take() ([]keys.Resource, []keys.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, e := h.res, h.calls
	h.res, h.calls = nil, nil
	return r, e
}

// fuzzIntake is the intake under test and its database.
type fuzzIntake struct {
	store   *store.Store
	handler http.Handler
	handoff *recordingHandoff
	// secretIDs maps slug and secret to the registered secret's id.
	secretIDs map[string]map[string]int64
}

func newFuzzIntake(f testing.TB) *fuzzIntake {
	f.Helper()
	s := testenv.Store(f)
	ctx := context.Background()
	fi := &fuzzIntake{store: s, handoff: &recordingHandoff{}, secretIDs: map[string]map[string]int64{}}
	for _, e := range fuzzEndpoints {
		if err := endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: e.slug, Provider: e.provider, Environment: e.environment,
			Account: e.own, Settings: e.settings, Secrets: e.secrets}); err != nil {
			f.Fatal(err)
		}
		for acct, ws := range e.links {
			if err := endpoints.LinkAccount(ctx, s, e.slug, acct, ws); err != nil {
				f.Fatal(err)
			}
		}
		ep, err := endpoints.GetEndpoint(ctx, s, e.slug)
		if err != nil {
			f.Fatal(err)
		}
		fi.secretIDs[e.slug] = map[string]int64{}
		for _, sec := range ep.Secrets {
			fi.secretIDs[e.slug][sec.Value] = sec.ID
		}
	}
	srv := hwebhook.New(hwebhook.Options{Routes: routestest.Builtin(),
		Store: s, Handoff: fi.handoff, Metrics: metrics.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxBodyBytes: 64 << 10, Tolerance: fuzzTolerance, CacheTTL: time.Minute,
	})
	fi.handler = srv.Handler()
	return fi
}

// marks are the highest inbox and quarantine ids: what "nothing stored"
// is checked against.
type marks struct{ inbox, quarantine int64 }

func (fi *fuzzIntake) marks(t testing.TB) marks {
	t.Helper()
	var m marks
	err := fi.store.Pool.QueryRow(context.Background(), `
		SELECT (SELECT coalesce(max(id), 0) FROM webhook_inbox), (SELECT coalesce(max(id), 0) FROM inbox_quarantine)`).
		Scan(&m.inbox, &m.quarantine)
	if err != nil {
		t.Fatalf("read row marks: %v", err)
	}
	return m
}

// delivery is one request the harness sends.
type delivery struct {
	slug   string
	body   []byte
	header http.Header
}

// outcome is what one delivery did.
type outcome struct {
	code       int
	answer     map[string]any
	inbox      []*inbox.StoredEvent
	quarantine []quarantined
	resources  []keys.Resource
	events     []keys.Event
}

type quarantined struct {
	reason, eventID string
	payload, sum    []byte
	headers         map[string]string
}

// send posts d to the handler and collects every row it added.
func (fi *fuzzIntake) send(t testing.TB, d delivery) outcome {
	t.Helper()
	before := fi.marks(t)
	fi.handoff.take()
	req := httptest.NewRequest(http.MethodPost, "/webhooks/"+d.slug, bytes.NewReader(d.body))
	for k, vs := range d.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	rec := httptest.NewRecorder()
	fi.handler.ServeHTTP(rec, req)

	out := outcome{code: rec.Code}
	if err := json.Unmarshal(rec.Body.Bytes(), &out.answer); err != nil {
		t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.String())
	}
	out.resources, out.events = fi.handoff.take()
	ctx := context.Background()
	rows, err := fi.store.Pool.Query(ctx, `SELECT provider, source_account, environment, event_id FROM webhook_inbox WHERE id > $1 ORDER BY id`, before.inbox)
	if err != nil {
		t.Fatal(err)
	}
	var added []keys.Event
	for rows.Next() {
		var k keys.Event
		if err := rows.Scan(&k.Provider, &k.Account, &k.Environment, &k.EventID); err != nil {
			t.Fatal(err)
		}
		added = append(added, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range added {
		e, err := inbox.GetInboxEvent(ctx, fi.store.Pool, k)
		if err != nil {
			t.Fatal(err)
		}
		out.inbox = append(out.inbox, e)
	}
	qrows, err := fi.store.Pool.Query(ctx, `SELECT reason, coalesce(event_id, ''), payload, body_sha256, headers FROM inbox_quarantine WHERE id > $1 ORDER BY id`, before.quarantine)
	if err != nil {
		t.Fatal(err)
	}
	for qrows.Next() {
		var q quarantined
		var h []byte
		if err := qrows.Scan(&q.reason, &q.eventID, &q.payload, &q.sum, &h); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(h, &q.headers); err != nil {
			t.Fatal(err)
		}
		out.quarantine = append(out.quarantine, q)
	}
	qrows.Close()
	if err := qrows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// requireNothingStored is the invariant for an unauthenticated request.
func requireNothingStored(t testing.TB, why string, out outcome) {
	t.Helper()
	if out.code != http.StatusUnauthorized {
		t.Fatalf("%s: answered %d %v, want 401", why, out.code, out.answer)
	}
	if len(out.inbox) > 0 || len(out.quarantine) > 0 || len(out.events) > 0 {
		t.Fatalf("%s: stored %d inbox and %d quarantine rows, %d hand-offs", why, len(out.inbox), len(out.quarantine), len(out.events))
	}
}

// checkStored verifies what an authenticated delivery stored: at most one
// row, consistent with the endpoint, the raw bytes and the answer.
func (fi *fuzzIntake) checkStored(t testing.TB, d delivery, out outcome) {
	t.Helper()
	ep := endpointBySlug(d.slug)
	if out.code >= 500 {
		t.Fatalf("answered %d %v to a delivery on %s", out.code, out.answer, d.slug)
	}
	if len(out.inbox)+len(out.quarantine) > 1 {
		t.Fatalf("one delivery stored %d inbox and %d quarantine rows", len(out.inbox), len(out.quarantine))
	}
	sum := sha256.Sum256(d.body)
	status, _ := out.answer["status"].(string)
	switch {
	case len(out.inbox) == 1:
		e := out.inbox[0]
		if out.code != http.StatusOK || (status != "accepted" && status != "ignored") {
			t.Fatalf("stored an inbox row but answered %d %v", out.code, out.answer)
		}
		for name, v := range map[string]string{"provider": e.Key.Provider, "source_account": e.Key.Account,
			"environment": e.Key.Environment, "event_id": e.Key.EventID, "workspace_id": e.WorkspaceID,
			"event_type": e.EventType, "resource_kind": e.ResourceKind, "resource_id": e.ResourceID} {
			if v == "" {
				t.Fatalf("stored row has an empty %s: %+v", name, e.Key)
			}
		}
		if e.Key.Provider != ep.provider || e.Key.Environment != ep.environment || e.EndpointSlug != ep.slug {
			t.Fatalf("row %+v does not match endpoint %s", e.Key, ep.slug)
		}
		if ws, ok := ep.links[e.Key.Account]; !ok || ws != e.WorkspaceID {
			t.Fatalf("row of account %q mapped to workspace %q; links %v", e.Key.Account, e.WorkspaceID, ep.links)
		}
		if !bytes.Equal(e.Payload, d.body) || !bytes.Equal(e.BodySHA256, sum[:]) {
			t.Fatal("stored payload or hash differs from the raw body")
		}
		if !fi.secretRegistered(d.slug, e.SecretID) {
			t.Fatalf("row records secret id %d, not one of %s's", e.SecretID, d.slug)
		}
		p, _ := providers.Lookup(e.Key.Provider)
		_, handled := routestest.Builtin().Route(e.Key.Provider, providers.RouteType(p, e.EventType))
		switch {
		case handled && e.Status == keys.StatusPending:
			want := e.Resource()
			if !want.Valid() || len(out.resources) != 1 || out.resources[0] != want || out.events[0] != e.Key {
				t.Fatalf("pending row %s: hand-off %v %v, want one for %v", e.Key, out.resources, out.events, want)
			}
		case !handled && e.Status == keys.StatusIgnored:
			if len(out.events) != 0 {
				t.Fatalf("ignored row %s was handed off", e.Key)
			}
		default:
			t.Fatalf("row %s has status %s (handler: %v)", e.Key, e.Status, handled)
		}
	case len(out.quarantine) == 1:
		q := out.quarantine[0]
		if !bytes.Equal(q.payload, d.body) || !bytes.Equal(q.sum, sum[:]) {
			t.Fatal("quarantined payload or hash differs from the raw body")
		}
		for name := range q.headers {
			switch strings.ToLower(name) {
			case "stripe-signature", "x-hub-signature-256", "x-hub-signature", "webhook-signature", "x-shopify-hmac-sha256":
				t.Fatalf("quarantine kept the signature header %s", name)
			}
		}
		want := map[string]int{inbox.ReasonMalformed: http.StatusBadRequest, inbox.ReasonUnknownAccount: http.StatusAccepted,
			inbox.ReasonEnvironmentMismatch: http.StatusAccepted, inbox.ReasonConflictingDuplicate: http.StatusOK}
		if code, ok := want[q.reason]; !ok || code != out.code {
			t.Fatalf("quarantined as %q but answered %d %v", q.reason, out.code, out.answer)
		}
		if len(out.events) != 0 {
			t.Fatal("a quarantined delivery was handed off")
		}
	default:
		// Nothing new: a duplicate of an accepted row, a repeated
		// quarantined delivery, or a refusal before anything is stored.
		switch out.code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest:
			// A repeated quarantined delivery is stored once.
			if status != "quarantined" && (out.code != http.StatusOK || status != "duplicate") {
				t.Fatalf("answered %d %v without storing anything", out.code, out.answer)
			}
		case http.StatusUnauthorized, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("answered %d %v", out.code, out.answer)
		}
	}
}

func (fi *fuzzIntake) secretRegistered(slug string, id int64) bool {
	for _, v := range fi.secretIDs[slug] {
		if v == id {
			return true
		}
	}
	return false
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

// setNonEmpty sets the headers of m whose value is not empty.
func setNonEmpty(h http.Header, m map[string]string) {
	for k, v := range m {
		setIf(h, k, v)
	}
}

// pick chooses from secrets by an input byte.
func pick(secrets []string, i uint8) string { return secrets[int(i)%len(secrets)] }

func allSecrets(registered, unknown []string) []string {
	return append(append([]string{}, registered...), unknown...)
}

func clampSkew(s int64) int64 { return max(-1<<33, min(s, 1<<33)) }

func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// stripeAuthentic is the oracle for Stripe-Signature: some v1 entry is the
// HMAC-SHA256 of "<t>.<body>" under a registered secret, for a t the header
// carries, and that t is within the tolerance either way (stripe-go alone
// bounds only the past; the intake bounds the future too). Lenient on
// purpose: any t entry counts, so "authentic" is a superset of what a
// correct verifier accepts.
func stripeAuthentic(header string, body []byte, secrets []string, now time.Time) bool {
	var ts []int64
	var sigs [][]byte
	for _, pair := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				ts = append(ts, n)
			}
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	for _, t := range ts {
		if d := now.Sub(time.Unix(t, 0)); d > fuzzTolerance || d < -fuzzTolerance {
			continue
		}
		for _, s := range secrets {
			want := mac([]byte(s), []byte(strconv.FormatInt(t, 10)), []byte("."), body)
			for _, sig := range sigs {
				if hmac.Equal(sig, want) {
					return true
				}
			}
		}
	}
	return false
}

var canonicalStripe = regexp.MustCompile(`^t=([0-9]+)(,v1=[0-9a-f]{64})+$`)

// FuzzStripeSignature fuzzes the Stripe-Signature header (its parsing by
// stripe-go, rotation, tolerance) and the body.
func FuzzStripeSignature(f *testing.F) {
	fi := newFuzzIntake(f)
	body := stripeBody("evt_fz_seed", "invoice.paid", "in_seed", "invoice", false, "")
	f.Add("t={t},v1={sig}", body, int64(0), uint8(0))
	f.Add("t={t},v1={sig},v0=deadbeef", body, int64(-60), uint8(1))
	f.Add("t={t},v1={sig}", body, int64(-400), uint8(0))
	f.Add("t={t},v1={sig}", body, int64(400), uint8(0))
	f.Add("t={t},v1={sig}", body, int64(0), uint8(2))
	f.Add("t=,v1=", body, int64(0), uint8(0))
	f.Add("", body, int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, header string, body []byte, skew int64, secret uint8) {
		now := time.Now()
		at := now.Unix() + clampSkew(skew)
		signer := pick(allSecrets(fzStripe, fzUnknownPlain), secret)
		sig := hex.EncodeToString(webhook.ComputeSignature(time.Unix(at, 0), body, signer))
		header = headerValue(strings.NewReplacer("{t}", strconv.FormatInt(at, 10), "{sig}", sig).Replace(header))
		d := delivery{slug: "fz-stripe", body: body, header: http.Header{"Content-Type": {"application/json"}}}
		if header != "" {
			d.header.Set("Stripe-Signature", header)
		}
		out := fi.send(t, d)
		if !stripeAuthentic(header, body, fzStripe, time.Now()) {
			requireNothingStored(t, "stripe signature not valid for a registered secret", out)
			return
		}
		if m := canonicalStripe.FindStringSubmatch(header); m != nil && out.code == http.StatusUnauthorized {
			ts, _ := strconv.ParseInt(m[1], 10, 64)
			if d := time.Since(time.Unix(ts, 0)); d < fuzzTolerance-5*time.Second && d > -fuzzTolerance+5*time.Second {
				t.Fatalf("a canonical, valid Stripe signature was refused: %v", out.answer)
			}
		}
		fi.checkStored(t, d, out)
	})
}

// githubAuthentic: X-Hub-Signature-256 is sha256=<hex of the HMAC-SHA256 of
// the raw body> under a registered secret.
func githubAuthentic(header string, body []byte, secrets []string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	return err == nil && macOfAny(got, body, secrets)
}

// macOfAny reports whether got is the HMAC-SHA256 of body under one of
// secrets.
func macOfAny(got, body []byte, secrets []string) bool {
	for _, s := range secrets {
		if hmac.Equal(got, mac([]byte(s), body)) {
			return true
		}
	}
	return false
}

// FuzzGitHubSignature fuzzes X-Hub-Signature-256, the content type (JSON or
// form-encoded), the delivery and event headers, and the body.
func FuzzGitHubSignature(f *testing.F) {
	fi := newFuzzIntake(f)
	body := []byte(`{"action":"opened","installation":{"id":4242},"repository":{"full_name":"octo/hello","owner":{"login":"octo"}}}`)
	form := []byte("payload=" + url.QueryEscape(string(body)))
	f.Add("sha256={sig}", body, "application/json", "d-1", "issues", uint8(0))
	f.Add("sha256={sig}", form, "application/x-www-form-urlencoded", "d-2", "issues", uint8(1))
	f.Add("sha1={sig}", body, "application/json", "d-3", "push", uint8(0))
	f.Add("sha256={sig}", body, "application/json", "d-4", "issues", uint8(2))
	f.Add("", body, "application/json", "d-5", "issues", uint8(0))
	f.Fuzz(func(t *testing.T, header string, body []byte, contentType, deliveryID, event string, secret uint8) {
		signer := pick(allSecrets(fzGitHub, fzUnknownPlain), secret)
		header = headerValue(strings.ReplaceAll(header, "{sig}", hex.EncodeToString(mac([]byte(signer), body))))
		d := delivery{slug: "fz-gh", body: body, header: http.Header{}}
		setNonEmpty(d.header, map[string]string{"X-Hub-Signature-256": header, "Content-Type": headerValue(contentType),
			"X-GitHub-Delivery": headerValue(deliveryID), "X-GitHub-Event": headerValue(event)})
		out := fi.send(t, d)
		if !githubAuthentic(header, body, fzGitHub) {
			requireNothingStored(t, "github signature not valid for a registered secret", out)
			return
		}
		if out.code == http.StatusUnauthorized && d.header.Get("Content-Type") == "application/json" {
			t.Fatalf("a valid GitHub signature on a JSON delivery was refused: %v", out.answer)
		}
		fi.checkStored(t, d, out)
	})
}

// standardAuthentic: webhook-timestamp is a unix time within the tolerance
// both ways, and one space-separated "v1,<base64>" entry of
// webhook-signature is the HMAC-SHA256 of "<id>.<t>.<body>" under a
// registered secret's key.
func standardAuthentic(h http.Header, body []byte, secrets []string, now time.Time) bool {
	id, tsText, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || tsText == "" || sigs == "" {
		return false
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > fuzzTolerance || d < -fuzzTolerance {
		return false
	}
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			continue
		}
		want := base64.StdEncoding.EncodeToString(mac(key, []byte(id), []byte("."), []byte(strconv.FormatInt(ts, 10)), []byte("."), body))
		for _, entry := range strings.Split(sigs, " ") {
			parts := strings.Split(entry, ",")
			if len(parts) >= 2 && parts[0] == "v1" && hmac.Equal([]byte(parts[1]), []byte(want)) {
				return true
			}
		}
	}
	return false
}

// FuzzStandardSignature fuzzes the three Standard Webhooks headers
// (webhook-id, webhook-timestamp, webhook-signature with several entries)
// and the body.
func FuzzStandardSignature(f *testing.F) {
	fi := newFuzzIntake(f)
	body := []byte(`{"type":"feedback.created","timestamp":"2026-11-30T10:00:00Z","data":{"id":"fb_1","project_id":"proj_1"}}`)
	f.Add("v1,{sig}", body, "msg_1", "{t}", int64(0), uint8(0))
	f.Add("v1,bm90IGEgc2lnbmF0dXJl v1,{sig}", body, "msg_2", "{t}", int64(-30), uint8(1))
	f.Add("v1,{sig}", body, "msg_3", "{t}", int64(600), uint8(0))
	f.Add("v1,{sig}", body, "msg_4", "{t}", int64(0), uint8(2))
	f.Add("v1a,{sig}", body, "msg_5", "{t}", int64(0), uint8(0))
	f.Add("v1,{sig}", body, "", "", int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, sigHeader string, body []byte, id, tsHeader string, skew int64, secret uint8) {
		now := time.Now()
		at := now.Unix() + clampSkew(skew)
		atText := strconv.FormatInt(at, 10)
		id = headerValue(id)
		tsHeader = headerValue(strings.ReplaceAll(tsHeader, "{t}", atText))
		signer := pick(allSecrets(fzStandard, fzUnknownStandard), secret)
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(signer, "whsec_"))
		sig := base64.StdEncoding.EncodeToString(mac(key, []byte(id), []byte("."), []byte(atText), []byte("."), body))
		sigHeader = headerValue(strings.ReplaceAll(sigHeader, "{sig}", sig))
		d := delivery{slug: "fz-feedback", body: body, header: http.Header{"Content-Type": {"application/json"}}}
		setNonEmpty(d.header, map[string]string{"webhook-id": id, "webhook-timestamp": tsHeader, "webhook-signature": sigHeader})
		out := fi.send(t, d)
		if !standardAuthentic(d.header, body, fzStandard, time.Now()) {
			requireNothingStored(t, "standard webhooks signature not valid for a registered secret", out)
			return
		}
		if out.code == http.StatusUnauthorized && tsHeader == atText && (skew > -250 && skew < 250) {
			t.Fatalf("a valid Standard Webhooks signature was refused: %v", out.answer)
		}
		fi.checkStored(t, d, out)
	})
}

// shopifyAuthentic: X-Shopify-Hmac-Sha256 is the base64 HMAC-SHA256 of the
// raw body under a registered secret.
func shopifyAuthentic(header string, body []byte, secrets []string) bool {
	got, err := base64.StdEncoding.DecodeString(header)
	return err == nil && macOfAny(got, body, secrets)
}

// FuzzShopifySignature fuzzes X-Shopify-Hmac-Sha256, the event id, topic
// and shop domain headers, and the body.
func FuzzShopifySignature(f *testing.F) {
	fi := newFuzzIntake(f)
	body := []byte(`{"id":820982911946154500,"email":"jon@example.com","total_price":"10.00"}`)
	f.Add("{sig}", body, "98880550-7158-44d4-b7cd-2c97c8a091b5", "orders/create", "demo.myshopify.com", uint8(0))
	f.Add("{sig}", body, "e-2", "orders/updated", "demo.myshopify.com", uint8(1))
	f.Add("{sig}", body, "e-3", "orders/create", "demo.myshopify.com", uint8(2))
	f.Add("AAAA", body, "e-4", "orders/create", "demo.myshopify.com", uint8(0))
	f.Add("{sig}", []byte(`{"domain":"demo.myshopify.com"}`), "e-5", "shop/update", "other.myshopify.com", uint8(0))
	f.Fuzz(func(t *testing.T, header string, body []byte, eventID, topic, shop string, secret uint8) {
		signer := pick(allSecrets(fzShopify, fzUnknownPlain), secret)
		header = headerValue(strings.ReplaceAll(header, "{sig}", base64.StdEncoding.EncodeToString(mac([]byte(signer), body))))
		d := delivery{slug: "fz-shop", body: body, header: http.Header{"Content-Type": {"application/json"}}}
		setNonEmpty(d.header, map[string]string{"X-Shopify-Hmac-Sha256": header, "X-Shopify-Event-Id": headerValue(eventID),
			"X-Shopify-Topic": headerValue(topic), "X-Shopify-Shop-Domain": headerValue(shop)})
		out := fi.send(t, d)
		if !shopifyAuthentic(header, body, fzShopify) {
			requireNothingStored(t, "shopify signature not valid for a registered secret", out)
			return
		}
		if out.code == http.StatusUnauthorized {
			t.Fatalf("a valid Shopify signature was refused: %v", out.answer)
		}
		fi.checkStored(t, d, out)
	})
}

// signedRoutes are the endpoints FuzzSignedBody sends to; the input's route
// byte picks one.
var signedRoutes = []string{"stripe", "connect", "github-json", "github-form", "feedback", "standard-paths", "shopify"}

// FuzzSignedBody lets the fuzzer shape the body (and the identifying
// headers) of a delivery the harness signs validly, for every provider, so
// normalization and derivation see arbitrary JSON: it must never crash,
// never answer 5xx or 401, and every row it stores must be consistent.
func FuzzSignedBody(f *testing.F) {
	fi := newFuzzIntake(f)
	f.Add(uint8(0), stripeBody("evt_sb_1", "invoice.paid", "in_1", "invoice", false, ""), "", "")
	f.Add(uint8(1), stripeBody("evt_sb_2", "customer.subscription.updated", "sub_1", "subscription", true, `"account":"acct_c1",`), "", "")
	f.Add(uint8(2), []byte(`{"action":"opened","installation":{"id":4242},"repository":{"full_name":"octo/hello"}}`), "d-sb-1", "issues")
	f.Add(uint8(3), []byte(`{"ref":"refs/heads/main","organization":{"login":"octo-org"}}`), "d-sb-2", "push")
	f.Add(uint8(4), []byte(`{"type":"feedback.created","timestamp":"2026-11-30T10:00:00Z","data":{"id":"fb_1","project_id":"proj_1"}}`), "msg_sb_1", "")
	f.Add(uint8(5), []byte(`{"event":{"type":"thing.changed","object":{"id":"th_1","seq":3}}}`), "msg_sb_2", "")
	f.Add(uint8(6), []byte(`{"id":820982911946154500,"email":"jon@example.com"}`), "e-sb-1", "orders/create")
	f.Fuzz(func(t *testing.T, route uint8, body []byte, idHeader, typeHeader string) {
		d := signedDelivery(signedRoutes[int(route)%len(signedRoutes)], body, headerValue(idHeader), headerValue(typeHeader))
		out := fi.send(t, d)
		if out.code == http.StatusUnauthorized {
			t.Fatalf("a validly signed delivery was refused: %v", out.answer)
		}
		fi.checkStored(t, d, out)
	})
}

// signedDelivery signs body for route with its endpoint's first secret.
func signedDelivery(route string, body []byte, id, typ string) delivery {
	h := http.Header{"Content-Type": {"application/json"}}
	now := time.Now()
	switch route {
	case "stripe", "connect":
		slug := map[string]string{"stripe": "fz-stripe", "connect": "fz-connect"}[route]
		h.Set("Stripe-Signature", hex.EncodeToString(webhook.ComputeSignature(now, body, fzStripe[0])))
		h.Set("Stripe-Signature", "t="+strconv.FormatInt(now.Unix(), 10)+",v1="+h.Get("Stripe-Signature"))
		return delivery{slug: slug, body: body, header: h}
	case "github-json", "github-form":
		if route == "github-form" {
			body = []byte("payload=" + url.QueryEscape(string(body)))
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac([]byte(fzGitHub[0]), body)))
		setIf(h, "X-GitHub-Delivery", id)
		setIf(h, "X-GitHub-Event", typ)
		return delivery{slug: "fz-gh", body: body, header: h}
	case "feedback", "standard-paths":
		slug := map[string]string{"feedback": "fz-feedback", "standard-paths": "fz-std"}[route]
		if id == "" {
			id = "msg_empty" // without a webhook-id nothing is signed
		}
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(fzStandard[0], "whsec_"))
		at := strconv.FormatInt(now.Unix(), 10)
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", at)
		h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac(key, []byte(id), []byte("."), []byte(at), []byte("."), body)))
		return delivery{slug: slug, body: body, header: h}
	default: // shopify
		h.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(mac([]byte(fzShopify[0]), body)))
		setIf(h, "X-Shopify-Event-Id", id)
		setIf(h, "X-Shopify-Topic", typ)
		h.Set("X-Shopify-Shop-Domain", "demo.myshopify.com")
		return delivery{slug: "fz-shop", body: body, header: h}
	}
}

func setIf(h http.Header, k, v string) {
	if v != "" {
		h.Set(k, v)
	}
}

// TestFuzzHarness checks the harness and its oracles on deliveries whose
// fate is known: a genuine signature for each route is accepted and stored
// (so the fuzz targets' consistency checks run), the same delivery signed
// with an unknown secret is refused, and the oracles agree.
func TestFuzzHarness(t *testing.T) {
	t.Parallel()
	fi := newFuzzIntake(t)
	bodies := map[string][]byte{
		"stripe":         stripeBody("evt_h_1", "invoice.paid", "in_h", "invoice", false, ""),
		"connect":        stripeBody("evt_h_2", "customer.subscription.updated", "sub_h", "subscription", true, `"account":"acct_c1",`),
		"github-json":    []byte(`{"action":"opened","installation":{"id":4242},"repository":{"full_name":"octo/h"}}`),
		"github-form":    []byte(`{"action":"closed","installation":{"id":4242},"repository":{"full_name":"octo/h"}}`),
		"feedback":       []byte(`{"type":"feedback.created","data":{"id":"fb_h","project_id":"proj_1"}}`),
		"standard-paths": []byte(`{"event":{"type":"thing.changed","object":{"id":"th_h","seq":3}}}`),
		"shopify":        []byte(`{"id":77,"email":"h@example.com"}`),
	}
	for _, route := range signedRoutes {
		d := signedDelivery(route, bodies[route], "h-"+route, map[string]string{"github-json": "issues", "github-form": "issues", "shopify": "orders/create"}[route])
		out := fi.send(t, d)
		if out.code != http.StatusOK || len(out.inbox) != 1 {
			t.Fatalf("%s: answered %d %v, stored %d rows; want 200 and one row", route, out.code, out.answer, len(out.inbox))
		}
		fi.checkStored(t, d, out)
	}
	now := time.Now()
	body := stripeBody("evt_h_3", "invoice.paid", "in_h", "invoice", false, "")
	good := "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + hex.EncodeToString(webhook.ComputeSignature(now, body, fzStripe[1]))
	bad := "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + hex.EncodeToString(webhook.ComputeSignature(now, body, fzUnknownPlain[0]))
	if !stripeAuthentic(good, body, fzStripe, now) || stripeAuthentic(bad, body, fzStripe, now) {
		t.Fatal("the Stripe oracle misjudges a plain delivery")
	}
	out := fi.send(t, delivery{slug: "fz-stripe", body: body, header: http.Header{"Stripe-Signature": {bad}}})
	requireNothingStored(t, "unknown secret", out)
	out = fi.send(t, delivery{slug: "fz-stripe", body: body, header: http.Header{"Stripe-Signature": {good}}})
	if out.code != http.StatusOK || len(out.inbox) != 1 || out.inbox[0].SecretID != fi.secretIDs["fz-stripe"][fzStripe[1]] {
		t.Fatalf("rotated secret: answered %d %v", out.code, out.answer)
	}
}

func stripeBody(id, typ, objID, objKind string, live bool, extra string) []byte {
	return []byte(`{"id":"` + id + `","object":"event","type":"` + typ + `","livemode":` + strconv.FormatBool(live) +
		`,"created":1760000000,` + extra + `"data":{"object":{"id":"` + objID + `","object":"` + objKind + `"}}}`)
}
