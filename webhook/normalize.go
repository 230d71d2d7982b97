package webhook

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// normalized is what the intake derives from a verified delivery.
type normalized struct {
	eventID string
	// eventType is the provider's type (Stripe/Standard), "event.action"
	// (GitHub) or the topic (Shopify).
	eventType string
	// account is the source account the delivery names; "" means the
	// endpoint's own account.
	account string
	// environment is what the delivery proves (Stripe livemode); "" means the
	// endpoint's environment.
	environment  string
	resourceKind string
	resourceID   string
	version      *int64
	occurredAt   *time.Time
}

// errMalformed marks a verified delivery the intake cannot use as it is.
type errMalformed struct{ reason string }

func (e errMalformed) Error() string { return e.reason }

func malformed(format string, args ...any) error { return errMalformed{fmt.Sprintf(format, args...)} }

// normalize derives the event key parts, type, resource and version.
func normalize(ep *store.Endpoint, h http.Header, payload []byte) (normalized, error) {
	if !gjson.ValidBytes(payload) {
		return normalized{}, malformed("body is not valid JSON")
	}
	doc := gjson.ParseBytes(payload)
	if !doc.IsObject() {
		return normalized{}, malformed("body is not a JSON object")
	}
	var n normalized
	var err error
	switch ep.Provider {
	case keys.ProviderStripe:
		n, err = normalizeStripe(doc)
	case keys.ProviderGitHub:
		n, err = normalizeGitHub(h, doc)
	case keys.ProviderStandard:
		n, err = normalizeStandard(ep.Settings, h, doc)
	case keys.ProviderShopify:
		n, err = normalizeShopify(h, doc)
	default:
		err = fmt.Errorf("provider %q has no normalizer", ep.Provider)
	}
	if err != nil {
		return normalized{}, err
	}
	if p := ep.Settings.VersionPath; p != "" {
		if v := doc.Get(p); v.Exists() {
			if v.Type != gjson.Number || v.Num != float64(int64(v.Num)) {
				return normalized{}, malformed("version at %s is not an integer", p)
			}
			iv := v.Int()
			n.version = &iv
		}
	}
	if len(n.eventID) > 255 || len(n.resourceID) > 255 || len(n.account) > 255 || len(n.eventType) > 255 {
		return normalized{}, malformed("an identifier is longer than 255 bytes")
	}
	// PostgreSQL text holds neither NUL nor invalid UTF-8, and its timestamps
	// end in year 294276: a signed delivery carrying such values is the
	// sender's bug, so it is quarantined as malformed (400) rather than
	// failing the insert with a 503 the provider would retry forever.
	for _, f := range []struct{ name, v string }{{"event id", n.eventID}, {"event type", n.eventType},
		{"source account", n.account}, {"environment", n.environment}, {"resource kind", n.resourceKind},
		{"resource id", n.resourceID}} {
		if !storableText(f.v) {
			return normalized{}, malformed("the %s is not valid UTF-8 text without NUL", f.name)
		}
	}
	if t := n.occurredAt; t != nil && (t.Year() < 1 || t.Year() > 9999) {
		return normalized{}, malformed("the event time %d is out of range", t.Unix())
	}
	return n, nil
}

// storableText reports whether s can be stored in a PostgreSQL text column.
func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func requireString(doc gjson.Result, path string) (string, error) {
	v := doc.Get(path)
	if !v.Exists() || v.Type == gjson.Null || strings.TrimSpace(v.String()) == "" {
		return "", malformed("missing %s", path)
	}
	if v.Type != gjson.String && v.Type != gjson.Number {
		return "", malformed("%s is not a string or number", path)
	}
	return v.String(), nil
}

func unixTime(v gjson.Result) *time.Time {
	if v.Type != gjson.Number {
		return nil
	}
	t := time.Unix(v.Int(), 0).UTC()
	return &t
}

func rfc3339(v gjson.Result) *time.Time {
	if v.Type != gjson.String {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v.Str)
	if err != nil {
		return nil
	}
	return &t
}

// normalizeStripe reads a Stripe Event: evt_ id, type, livemode, the
// Connect account, and the object the event is about.
func normalizeStripe(doc gjson.Result) (normalized, error) {
	var n normalized
	var err error
	if n.eventID, err = requireString(doc, "id"); err != nil {
		return n, err
	}
	if !strings.HasPrefix(n.eventID, "evt_") {
		return n, malformed("id %q is not a Stripe event id (evt_…)", n.eventID)
	}
	if n.eventType, err = requireString(doc, "type"); err != nil {
		return n, err
	}
	live := doc.Get("livemode")
	if live.Type != gjson.True && live.Type != gjson.False {
		return n, malformed("missing livemode")
	}
	n.environment = keys.EnvTest
	if live.Bool() {
		n.environment = keys.EnvLive
	}
	if a := doc.Get("account"); a.Type == gjson.String && a.Str != "" {
		n.account = a.Str
	}
	n.resourceKind = doc.Get("data.object.object").String()
	n.resourceID = doc.Get("data.object.id").String()
	n.occurredAt = unixTime(doc.Get("created"))
	return n, nil
}

// normalizeGitHub: X-GitHub-Delivery is the id kept across redeliveries,
// the installation is the account, the repository the resource.
func normalizeGitHub(h http.Header, doc gjson.Result) (normalized, error) {
	var n normalized
	n.eventID = h.Get("X-GitHub-Delivery")
	if n.eventID == "" {
		return n, malformed("missing X-GitHub-Delivery")
	}
	event := h.Get("X-GitHub-Event")
	if event == "" {
		return n, malformed("missing X-GitHub-Event")
	}
	n.eventType = event
	if a := doc.Get("action"); a.Type == gjson.String && a.Str != "" {
		n.eventType = event + "." + a.Str
	}
	switch {
	case doc.Get("installation.id").Exists():
		n.account = doc.Get("installation.id").String()
	case doc.Get("organization.login").Exists():
		n.account = doc.Get("organization.login").String()
	case doc.Get("repository.owner.login").Exists():
		n.account = doc.Get("repository.owner.login").String()
	}
	switch {
	case doc.Get("repository.full_name").Exists():
		n.resourceKind, n.resourceID = "repository", doc.Get("repository.full_name").String()
	case doc.Get("organization.login").Exists():
		n.resourceKind, n.resourceID = "organization", doc.Get("organization.login").String()
	}
	return n, nil
}

// normalizeStandard: webhook-id is the event id; type, resource and
// account come from the endpoint's configured JSON paths.
func normalizeStandard(s store.EndpointSettings, h http.Header, doc gjson.Result) (normalized, error) {
	var n normalized
	var err error
	n.eventID = h.Get("webhook-id")
	typePath := orDefault(s.TypePath, "type")
	if n.eventType, err = requireString(doc, typePath); err != nil {
		return n, err
	}
	if s.AccountPath != "" {
		if n.account, err = requireString(doc, s.AccountPath); err != nil {
			return n, err
		}
	}
	n.resourceID = doc.Get(orDefault(s.ResourcePath, "data.id")).String()
	n.resourceKind = s.ResourceKind
	if n.resourceKind == "" {
		n.resourceKind, _, _ = strings.Cut(n.eventType, ".")
	}
	n.occurredAt = rfc3339(doc.Get("timestamp"))
	return n, nil
}

// normalizeShopify: X-Shopify-Event-Id is kept across retries; the shop
// domain is the account; the topic's noun and the body's id the resource.
func normalizeShopify(h http.Header, doc gjson.Result) (normalized, error) {
	var n normalized
	n.eventID = h.Get("X-Shopify-Event-Id")
	if n.eventID == "" {
		return n, malformed("missing X-Shopify-Event-Id")
	}
	n.eventType = h.Get("X-Shopify-Topic")
	if n.eventType == "" {
		return n, malformed("missing X-Shopify-Topic")
	}
	n.account = h.Get("X-Shopify-Shop-Domain")
	if n.account == "" {
		return n, malformed("missing X-Shopify-Shop-Domain")
	}
	noun, _, _ := strings.Cut(n.eventType, "/")
	n.resourceKind = strings.TrimSuffix(noun, "s")
	if id := doc.Get("id"); id.Exists() && id.Type != gjson.Null {
		n.resourceID = id.String()
	} else {
		n.resourceKind, n.resourceID = "shop", n.account
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Get("X-Shopify-Triggered-At")); err == nil {
		n.occurredAt = &t
	}
	return n, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// resourceOrFallback returns the resource of a handled event (required) or,
// for an ignored one, the event itself when it names none.
func (n normalized) resourceOrFallback(handled bool) (kind, id string, err error) {
	if n.resourceKind != "" && n.resourceID != "" {
		return n.resourceKind, n.resourceID, nil
	}
	if handled {
		return "", "", malformed("missing the resource id of a %s event", n.eventType)
	}
	return "event", n.eventID, nil
}
