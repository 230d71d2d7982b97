package admission

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/providers"
)

// normalized is what the provider reads from a verified delivery, with the
// endpoint's version.
type normalized struct {
	providers.Normalized
	version *int64
}

// normalize derives the event key parts, type, resource and version: the
// provider reads its own fields, then what holds for every provider is
// checked here. Its *providers.MalformedError is a delivery that cannot be
// used as it is.
func normalize(ep *endpoints.Endpoint, p providers.Provider, h http.Header, payload []byte) (normalized, error) {
	if !gjson.ValidBytes(payload) {
		return normalized{}, providers.Malformedf("body is not valid JSON")
	}
	doc := gjson.ParseBytes(payload)
	if !doc.IsObject() {
		return normalized{}, providers.Malformedf("body is not a JSON object")
	}
	if p == nil {
		return normalized{}, fmt.Errorf("provider %q has no normalizer", ep.Provider)
	}
	pn, err := p.Normalize(ep.Settings, h, doc)
	if err != nil {
		return normalized{}, err
	}
	if pn.Reply != nil {
		return normalized{Normalized: providers.Normalized{Reply: pn.Reply}}, checkReply(pn.Reply)
	}
	n := normalized{Normalized: pn}
	if path := ep.Settings.VersionPath; path != "" {
		if v := doc.Get(path); v.Exists() {
			if v.Type != gjson.Number || v.Num != float64(int64(v.Num)) {
				return normalized{}, providers.Malformedf("version at %s is not an integer", path)
			}
			iv := v.Int()
			n.version = &iv
		}
	}
	if len(n.EventID) > 255 || len(n.ResourceID) > 255 || len(n.ObjectID) > 255 || len(n.Account) > 255 || len(n.EventType) > 255 {
		return normalized{}, providers.Malformedf("an identifier is longer than 255 bytes")
	}
	// PostgreSQL text holds neither NUL nor invalid UTF-8, and its timestamps
	// end in year 294276: a signed delivery carrying such values is the
	// sender's bug, so it is quarantined as malformed (400) rather than
	// failing the insert with a 503 the provider would retry forever.
	for _, f := range []struct{ name, v string }{{"event id", n.EventID}, {"event type", n.EventType},
		{"source account", n.Account}, {"environment", n.Environment}, {"resource kind", n.ResourceKind},
		{"resource id", n.ResourceID}, {"object id", n.ObjectID}} {
		if !storableText(f.v) {
			return normalized{}, providers.Malformedf("the %s is not valid UTF-8 text without NUL", f.name)
		}
	}
	if t := n.OccurredAt; t != nil && (t.Year() < 1 || t.Year() > 9999) {
		return normalized{}, providers.Malformedf("the event time %d is out of range", t.Unix())
	}
	return n, nil
}

// checkReply refuses a handshake's reply the intake will not send: longer
// than providers.MaxReplyBytes, or with a Content-Type that is no media
// type (a header of the provider's making must not smuggle another). An
// empty Content-Type becomes text/plain.
func checkReply(r *providers.Reply) error {
	if len(r.Body) > providers.MaxReplyBytes {
		return providers.Malformedf("the handshake's reply is %d bytes, more than %d", len(r.Body), providers.MaxReplyBytes)
	}
	if r.ContentType == "" {
		r.ContentType = "text/plain; charset=utf-8"
	}
	if _, _, err := mime.ParseMediaType(r.ContentType); err != nil || strings.ContainsAny(r.ContentType, "\r\n") {
		return providers.Malformedf("the handshake's reply has no valid content type")
	}
	return nil
}

// storableText reports whether s can be stored in a PostgreSQL text column.
func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
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
	if n.ResourceKind != "" && n.ResourceID != "" {
		return n.ResourceKind, n.ResourceID, nil
	}
	if handled {
		return "", "", fmt.Errorf("missing the resource id of a %s event", n.EventType)
	}
	return "event", n.EventID, nil
}

// serializeOn moves the event onto the resource a route names: kind, and
// the id read from the verified payload at the rule's path. The resource
// the provider normalized is kept as the event's object (unless the
// provider already named one).
func (n *normalized) serializeOn(rule routes.ResourceRule, payload []byte) error {
	v := gjson.GetBytes(payload, rule.IDPath)
	if v.IsObject() {
		v = v.Get("id") // an expandable field, expanded
	}
	id := strings.TrimSpace(v.String())
	if !v.Exists() || id == "" || (v.Type != gjson.String && v.Type != gjson.Number) {
		return fmt.Errorf("%s event names no %s at %s", n.EventType, rule.Kind, rule.IDPath)
	}
	if len(id) > 255 || !storableText(id) {
		return fmt.Errorf("the %s id at %s is not storable text of at most 255 bytes", rule.Kind, rule.IDPath)
	}
	if n.ObjectID == "" && (n.ResourceKind != rule.Kind || n.ResourceID != id) {
		n.ObjectID = n.ResourceID
	}
	n.ResourceKind, n.ResourceID = rule.Kind, id
	return nil
}

// isMalformed reports a provider's *MalformedError.
func isMalformed(err error) (*providers.MalformedError, bool) {
	var bad *providers.MalformedError
	ok := errors.As(err, &bad)
	return bad, ok
}
