package samples

import (
	"crypto/rand"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

//go:embed payloads
var payloads embed.FS

// Template is the body of one event type and how each delivery of it is
// made.
type Template struct {
	// Provider is the provider's name (keys.ProviderStripe, …).
	Provider string
	// Type is the event type as hookinbox records it: Stripe's and
	// Standard Webhooks' type, GitHub's event.action ("issues.opened";
	// "push" without an action), Shopify's topic ("orders/create").
	Type string
	// Source says where the body comes from.
	Source string
	// Fresh says what each delivery changes in the body beside the ids
	// every delivery of the provider gets.
	Fresh string

	file  string
	body  []byte
	fresh func(d *doc, now time.Time)
}

// builtin are the built-in templates, by provider then type.
var builtin = []*Template{
	{Provider: keys.ProviderStripe, Type: "invoice.paid", file: "stripe/invoice.paid.json", Source: sourceStripe},
	{Provider: keys.ProviderStripe, Type: "customer.subscription.updated", file: "stripe/customer.subscription.updated.json", Source: sourceStripe},
	{Provider: keys.ProviderStripe, Type: "checkout.session.completed", file: "stripe/checkout.session.completed.json", Source: sourceStripe},
	{Provider: keys.ProviderStripe, Type: "credit_note.created", file: "stripe/credit_note.created.json", Source: sourceStripe},
	{Provider: keys.ProviderGitHub, Type: "push", file: "github/push.json", Source: sourceGitHub,
		Fresh: "a new commit (its SHA everywhere it appears, its time)", fresh: freshPush},
	{Provider: keys.ProviderGitHub, Type: "issues.opened", file: "github/issues.opened.json", Source: sourceGitHub,
		Fresh: "a new issue (id, number, times)", fresh: freshIssue},
	{Provider: keys.ProviderGitHub, Type: "pull_request.opened", file: "github/pull_request.opened.json", Source: sourceGitHub,
		Fresh: "a new pull request (id, number, times)", fresh: freshPull},
	{Provider: keys.ProviderGitHub, Type: "ping", file: "github/ping.json", Source: sourceGitHub,
		Fresh: "a new hook (its id everywhere it appears, its times)", fresh: freshPing},
	{Provider: keys.ProviderStandard, Type: "feedback.created", file: "standard/feedback.created.json", Source: sourceOurs,
		Fresh: "a new feedback item (data.id, times)", fresh: freshFeedback},
	{Provider: keys.ProviderShopify, Type: "orders/create", file: "shopify/orders-create.json", Source: sourceOurs,
		Fresh: "a new order (id everywhere it appears, number, name, times)", fresh: freshOrder},
}

const (
	sourceGitHub = "@octokit/webhooks-examples 7.6.1 (MIT)"
	sourceStripe = "stripe-mock v0.203.0 fixtures (MIT), wrapped as an event"
	sourceOurs   = "hookinbox's own example"
)

func init() {
	for _, t := range builtin {
		b, err := payloads.ReadFile("payloads/" + t.file)
		if err != nil {
			panic("samples: " + err.Error())
		}
		t.body = b
	}
}

// ErrUnknownType means no built-in template has that event type.
var ErrUnknownType = errors.New("unknown event type")

// Types lists the built-in event types of provider, sorted.
func Types(provider string) []string {
	var out []string
	for _, t := range builtin {
		if t.Provider == provider {
			out = append(out, t.Type)
		}
	}
	slices.Sort(out)
	return out
}

// Lookup is the built-in template of provider's eventType. An unknown type
// is ErrUnknownType, with the known ones in the message.
func Lookup(provider, eventType string) (*Template, error) {
	for _, t := range builtin {
		if t.Provider == provider && t.Type == eventType {
			return t, nil
		}
	}
	known := Types(provider)
	if len(known) == 0 {
		return nil, fmt.Errorf("%w %q: hookinbox has no built-in %s payloads (give --payload FILE)", ErrUnknownType, eventType, provider)
	}
	return nil, fmt.Errorf("%w %q for %s: the built-in ones are %s (or give --payload FILE)", ErrUnknownType, eventType, provider,
		strings.Join(known, ", "))
}

// Custom is a template of the caller's own body (`send --payload FILE`),
// a JSON object, for eventType. It gets the fresh ids of every delivery of
// its provider and, when eventType is a built-in type, what that template
// makes fresh too (only in fields the body has).
func Custom(provider, eventType string, body []byte) (*Template, error) {
	if strings.TrimSpace(eventType) == "" {
		return nil, errors.New("an event type is required")
	}
	if _, err := parseDoc(body); err != nil {
		return nil, fmt.Errorf("the payload is not a JSON object: %w", err)
	}
	t := &Template{Provider: provider, Type: eventType, Source: "your payload", body: body}
	if b, err := Lookup(provider, eventType); err == nil {
		t.fresh, t.Fresh = b.fresh, b.Fresh
	}
	return t, nil
}

// Body is the template's body as embedded.
func (t *Template) Body() []byte { return t.body }

// Endpoint is what making a delivery needs to know of the endpoint it goes
// to.
type Endpoint struct {
	Slug        string
	Provider    string
	Environment string
	Settings    keys.EndpointSettings
	// OwnAccount is the source account of its events that name none (its
	// own account, else its single linked account; "" for none).
	OwnAccount string
	// Links maps its linked source accounts to their workspaces.
	Links map[string]string
}

func (e Endpoint) linked() []string {
	out := make([]string, 0, len(e.Links))
	for a := range e.Links {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// namesNoAccount: the endpoint's deliveries carry no account of their own
// (a Standard Webhooks endpoint without an account path), so they always
// go to its own account.
func (e Endpoint) namesNoAccount() bool {
	return e.Provider == keys.ProviderStandard && e.Settings.AccountPath == ""
}

// ChooseAccount is the source account the deliveries are to name, so that
// the endpoint accepts them: requested when given (it must be linked),
// else the endpoint's own account when it is linked, else its first
// linked account. Without a linked account a delivery would only be
// quarantined, so it is an error, which says how to link one.
func (e Endpoint) ChooseAccount(requested string) (string, error) {
	linked := e.linked()
	if requested != "" {
		if _, ok := e.Links[requested]; !ok {
			return "", fmt.Errorf("account %s is not linked to endpoint %s (linked: %s)", requested, e.Slug, orNone(linked))
		}
		if e.namesNoAccount() && requested != e.OwnAccount {
			return "", fmt.Errorf("endpoint %s has no --account-path: its deliveries name no account and go to its own account (%s), not %s",
				e.Slug, orNone([]string{e.OwnAccount}), requested)
		}
		return requested, nil
	}
	if len(linked) == 0 {
		return "", fmt.Errorf("endpoint %s links no account, so every delivery would be quarantined as unknown_account; "+
			"link one first: hookinbox endpoints link --slug %s --account ACCOUNT --workspace WORKSPACE", e.Slug, e.Slug)
	}
	if _, ok := e.Links[e.OwnAccount]; ok && e.OwnAccount != "" {
		return e.OwnAccount, nil
	}
	if e.namesNoAccount() {
		return "", fmt.Errorf("endpoint %s has no --account-path, so its deliveries go to its own account, and it has none linked "+
			"(set one: hookinbox endpoints set-account --slug %s --account ACCOUNT)", e.Slug, e.Slug)
	}
	return linked[0], nil
}

func orNone(s []string) string {
	if len(s) == 0 || (len(s) == 1 && s[0] == "") {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Delivery is one delivery as its provider sends it, but for the
// signature (providers.Signer adds it).
type Delivery struct {
	// EventID is the id hookinbox keys the event by (Stripe's evt_, the
	// GitHub delivery GUID, the webhook-id, the Shopify event id).
	EventID string
	// Header holds the provider's headers but the signature.
	Header http.Header
	Body   []byte
}

// Delivery makes one new event's delivery to e from t, naming account (from
// ChooseAccount), at time now: fresh ids, the account where e's provider
// reads it, e's environment, and the provider's headers.
func (t *Template) Delivery(e Endpoint, account string, now time.Time) (Delivery, error) {
	if e.Provider != t.Provider {
		return Delivery{}, fmt.Errorf("a %s payload cannot go to a %s endpoint", t.Provider, e.Provider)
	}
	d, err := parseDoc(t.body)
	if err != nil {
		return Delivery{}, fmt.Errorf("payload: %w", err)
	}
	if t.fresh != nil {
		t.fresh(d, now)
	}
	own := account == e.OwnAccount
	switch t.Provider {
	case keys.ProviderStripe:
		return stripeDelivery(d, t.Type, e, account, own, now), nil
	case keys.ProviderGitHub:
		return githubDelivery(d, t.Type, e, account, own)
	case keys.ProviderStandard:
		return standardDelivery(d, t.Type, e, account, now)
	case keys.ProviderShopify:
		return shopifyDelivery(d, t.Type, account, now), nil
	}
	return Delivery{}, fmt.Errorf("hookinbox cannot make %s deliveries", t.Provider)
}

// stripeDelivery: a new evt_ id and created time, livemode from the
// environment (the event's and its object's), and the account only for a
// connected account (an event of the endpoint's own account names none):
// a snapshot event's account, a thin event's context (a thin event, object
// v2.core.event, is a payload of the caller's own; none is built in).
// Stripe sends its JSON indented.
func stripeDelivery(d *doc, typ string, e Endpoint, account string, own bool, now time.Time) Delivery {
	live := e.Environment == keys.EnvLive
	thin := d.str("object") == stripe.ThinObject
	accountField := "account"
	id := "evt_" + base62(24)
	created := any(now.Unix())
	if thin {
		accountField, created = "context", now.UTC().Format("2006-01-02T15:04:05.000Z")
		id = "evt_" + base62(56)
		if !live {
			id = "evt_test_" + base62(56)
		}
	}
	d.root.putFront("id", id)
	if !d.has("object") {
		d.root.putAfter("object", "event", "id")
	}
	if own {
		d.root.remove(accountField)
	} else {
		d.root.putAfter(accountField, account, "object")
	}
	d.root.put("created", created)
	d.root.put("livemode", live)
	d.update("data.object.livemode", live)
	d.root.put("type", typ)
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	h.Set("Accept", "*/*; q=0.5, application/xml")
	h.Set("Cache-Control", "no-cache")
	return Delivery{EventID: id, Header: h, Body: d.indented()}
}

// githubDelivery: a new delivery GUID, the event and action of the type,
// the account where the GitHub provider reads it first (an installation id
// for a numeric account, else the organization's or the repository
// owner's login), and GitHub's delivery headers. GitHub sends compact JSON.
func githubDelivery(d *doc, typ string, e Endpoint, account string, own bool) (Delivery, error) {
	event, action, _ := strings.Cut(typ, ".")
	if action != "" {
		d.root.putFront("action", action)
	}
	if err := githubAccount(d, account, own); err != nil {
		return Delivery{}, err
	}
	id := uuid()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", id)
	if e.Settings.GitHubHookID != 0 {
		h.Set("X-GitHub-Hook-ID", strconv.FormatInt(e.Settings.GitHubHookID, 10))
	}
	switch rid, _ := d.get("repository.id"); {
	case e.Settings.GitHubAppID != 0 && d.has("installation.id"):
		h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
		h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(e.Settings.GitHubAppID, 10))
	case rid != nil:
		h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
		h.Set("X-GitHub-Hook-Installation-Target-ID", fmt.Sprint(rid))
	}
	return Delivery{EventID: id, Header: h, Body: d.compact()}, nil
}

// githubAccount writes account where the GitHub provider reads a
// delivery's account: installation.id, else organization.login, else
// repository.owner.login (with the repository's full name to match).
func githubAccount(d *doc, account string, own bool) error {
	if n, err := strconv.ParseInt(account, 10, 64); err == nil && n > 0 {
		return d.set("installation.id", n)
	}
	d.del("installation")
	switch {
	case d.has("organization"):
		return d.set("organization.login", account)
	case d.has("repository.owner"):
		if err := d.set("repository.owner.login", account); err != nil {
			return err
		}
		if name := d.str("repository.name"); name != "" {
			d.update("repository.full_name", account+"/"+name)
		}
		return nil
	case own:
		return nil // it names no account: the endpoint's own
	}
	return fmt.Errorf("the payload names no repository or organization to carry account %s", account)
}

// standardDelivery: a new webhook-id, the type at the endpoint's type
// path, the account at its account path (none without one: its own), a
// new timestamp.
func standardDelivery(d *doc, typ string, e Endpoint, account string, now time.Time) (Delivery, error) {
	if err := d.set(orDefault(e.Settings.TypePath, "type"), typ); err != nil {
		return Delivery{}, fmt.Errorf("the endpoint's type path: %w", err)
	}
	if p := e.Settings.AccountPath; p != "" {
		if err := d.set(p, account); err != nil {
			return Delivery{}, fmt.Errorf("the endpoint's account path: %w", err)
		}
	}
	d.update("timestamp", now.UTC().Format(time.RFC3339))
	id := "msg_" + base62(27)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "hookinbox-send/standard-webhooks")
	h.Set("Webhook-Id", id)
	return Delivery{EventID: id, Header: h, Body: d.compact()}, nil
}

// shopifyAPIVersion is the Admin API version the deliveries say they were
// rendered with.
const shopifyAPIVersion = "2026-07"

// shopifyDelivery: a classic webhook's headers (topic, shop, a new event
// and webhook id, the trigger time). Shopify sends compact JSON.
func shopifyDelivery(d *doc, topic, shop string, now time.Time) Delivery {
	id := uuid()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Shopify-Captain-Hook")
	h.Set("X-Shopify-Topic", topic)
	h.Set("X-Shopify-Shop-Domain", shop)
	h.Set("X-Shopify-Api-Version", shopifyAPIVersion)
	h.Set("X-Shopify-Event-Id", id)
	h.Set("X-Shopify-Webhook-Id", uuid())
	h.Set("X-Shopify-Triggered-At", now.UTC().Format(time.RFC3339Nano))
	return Delivery{EventID: id, Header: h, Body: d.compact()}
}

// The fresh parts of the built-in types: what makes one event another's
// twin but not its copy. GitHub and Shopify sign the body only, so the
// intake takes the same body under a new id for a replay: each event's body
// must differ as the provider's would.

func freshPush(d *doc, now time.Time) {
	if old := d.str("after"); isSHA(old) {
		d.replace(old, sha1Hex())
	}
	t := now.UTC().Format(time.RFC3339)
	d.update("head_commit.timestamp", t)
	d.update("commits.0.timestamp", t)
}

func freshIssue(d *doc, now time.Time) {
	replaceID(d, "issue.id")
	d.update("issue.number", smallNumber())
	t := now.UTC().Format(time.RFC3339)
	d.update("issue.created_at", t)
	d.update("issue.updated_at", t)
}

func freshPull(d *doc, now time.Time) {
	replaceID(d, "pull_request.id")
	n := smallNumber()
	d.update("number", n)
	d.update("pull_request.number", n)
	t := now.UTC().Format(time.RFC3339)
	d.update("pull_request.created_at", t)
	d.update("pull_request.updated_at", t)
}

func freshPing(d *doc, now time.Time) {
	replaceID(d, "hook_id")
	t := now.UTC().Format(time.RFC3339)
	d.update("hook.created_at", t)
	d.update("hook.updated_at", t)
}

func freshFeedback(d *doc, now time.Time) {
	d.update("data.id", "fb_"+base62(27))
	d.update("data.created_at", now.UTC().Format(time.RFC3339))
}

func freshOrder(d *doc, now time.Time) {
	replaceID(d, "id")
	n := 1000 + smallNumber()
	d.update("order_number", n)
	d.update("number", n-1000)
	d.update("name", "#"+strconv.FormatInt(n, 10))
	t := now.Format("2006-01-02T15:04:05-07:00")
	for _, p := range []string{"created_at", "processed_at", "updated_at"} {
		d.update(p, t)
	}
}

// replaceID gives the numeric id at path a new value of as many digits,
// everywhere the old one appears (URLs, GraphQL ids). Short ids could
// occur by chance elsewhere, so they are left alone.
func replaceID(d *doc, path string) {
	v, _ := d.get(path)
	old := fmt.Sprint(v)
	if len(old) < 6 || strings.Trim(old, "0123456789") != "" {
		return
	}
	d.replace(old, digits(len(old)))
}

func isSHA(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == 40 && err == nil && strings.Trim(s, "0") != ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Random parts of ids, from crypto/rand (ids only need to be unique).

const alphabet62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func base62(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	for i := range b {
		b[i] = alphabet62[int(b[i])%len(alphabet62)]
	}
	return string(b)
}

// digits is a random number of n digits (no leading zero).
func digits(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}

func smallNumber() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return 2 + int64(binary.BigEndian.Uint64(b[:])%9000)
}

func sha1Hex() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// uuid is a random (version 4) UUID, as GitHub's delivery GUIDs and
// Shopify's ids are.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}
