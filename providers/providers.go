package providers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
)

// Provider is one provider's scheme: everything the intake needs to know
// about its deliveries. Implementations are stateless values, safe for
// concurrent use.
type Provider interface {
	// Name is the provider's name in endpoints and event keys
	// ("stripe", …; a team's own provider names itself).
	Name() string
	// Verifier prepares the check of an endpoint's active secrets (several
	// while one is rotated); the intake keeps it with the cached endpoint.
	Verifier(secrets []hookintype.Secret) Verifier
	// Normalize reads a verified delivery: h its headers, doc its JSON
	// object (the payload Verify returned), s the endpoint's settings. A
	// delivery that cannot be used as it is fails with a *MalformedError
	// (Malformedf).
	Normalize(s hookintype.EndpointSettings, h http.Header, doc gjson.Result) (Normalized, error)
	// KeepHeader reports whether a delivery header (name in lower case) is
	// kept with a quarantined delivery, so it can be re-admitted later. Never
	// a signature or a secret. Content-Type and User-Agent are always kept.
	KeepHeader(name string) bool
	// CheckSecret refuses a signing secret the provider's scheme cannot use
	// (the registry has already refused an empty one).
	CheckSecret(secret string) error
}

// Verifier authenticates deliveries on their exact raw bytes.
type Verifier interface {
	// Verify checks body and h with the provider's own scheme, using the
	// official verifier where one exists. Timestamped schemes refuse a
	// delivery whose time is further than tolerance from now, either way.
	// Any failure is an *Unauthenticated.
	Verify(h http.Header, body []byte, tolerance time.Duration, now time.Time) (Verified, error)
}

// Verified is what a successful check yields.
type Verified struct {
	// SecretID is the id of the secret that matched.
	SecretID int64
	// Payload is the JSON to normalize: the body itself, except where the
	// provider wraps it (GitHub's form-encoded deliveries).
	Payload []byte
}

// Unwrapper is implemented by providers whose authenticated body is not
// always the JSON itself (GitHub's form-encoded deliveries carry it in a
// "payload" field). Re-admission uses it on a delivery verified when it
// arrived; Payload is how callers ask.
type Unwrapper interface {
	Unwrap(h http.Header, body []byte) ([]byte, error)
}

// Payload is the JSON inside an already-authenticated body: p's Unwrap,
// or the body itself.
func Payload(p Provider, h http.Header, body []byte) ([]byte, error) {
	if u, ok := p.(Unwrapper); ok {
		return u.Unwrap(h, body)
	}
	return body, nil
}

// Signer is implemented by providers whose deliveries hookinbox can make
// itself, signed exactly as the provider signs them: `hookinbox send`,
// hookintest.Sign and the simulator all sign through it, and each
// provider's tests check that what Sign makes, its Verifier accepts. Sign
// (the function) is how callers ask.
type Signer interface {
	// Sign adds to h the signature headers the provider sends with body,
	// made with secret at time at (a scheme that signs no time ignores
	// it). Headers the scheme signs besides the body must already be in h
	// (Standard Webhooks' webhook-id); the delivery's other headers (event
	// type, delivery id) are the caller's.
	Sign(secret string, h http.Header, body []byte, at time.Time) error
}

// ErrCannotSign means a provider has no Signer.
var ErrCannotSign = errors.New("provider cannot sign deliveries")

// Sign signs a delivery to p with secret at time at (Signer); a provider
// without a Signer fails with ErrCannotSign.
func Sign(p Provider, secret string, h http.Header, body []byte, at time.Time) error {
	s, ok := p.(Signer)
	if !ok {
		return fmt.Errorf("%s: %w", p.Name(), ErrCannotSign)
	}
	return s.Sign(secret, h, body, at)
}

// RouteTyper is implemented by providers that deliver one business event
// under more than one type: Stripe's thin event v1.invoice.paid is the
// snapshot event invoice.paid, sent through an event destination. RouteType
// is the type the route table knows the event by; the stored event keeps
// the type it was delivered with. RouteType (the function) is how callers
// ask.
type RouteTyper interface {
	RouteType(eventType string) string
}

// RouteType is the type eventType is routed by: p's RouteType, or
// eventType itself when p has none (or p is nil: an endpoint of an
// unregistered provider). The intake's handled-or-ignored decision and the
// worker's choice of handler both route by it, so they always agree.
func RouteType(p Provider, eventType string) string {
	if r, ok := p.(RouteTyper); ok {
		return r.RouteType(eventType)
	}
	return eventType
}

// Normalized is what a provider reads from a verified delivery.
type Normalized struct {
	// EventID is the id the sender keeps across redeliveries.
	EventID string
	// EventType is the provider's type (Stripe, Standard Webhooks),
	// "event.action" (GitHub) or the topic (Shopify).
	EventType string
	// Account is the source account the delivery names; "" means the
	// endpoint's own account.
	Account string
	// Environment is what the delivery proves (Stripe's livemode); "" means
	// the endpoint's environment.
	Environment  string
	ResourceKind string
	ResourceID   string
	// ObjectID is the object the event is about when the resource is its
	// parent (a Stripe credit note, whose resource is its invoice); "" when
	// the object is the resource.
	ObjectID string
	// OccurredAt is when the provider says the event happened, if it says.
	OccurredAt *time.Time
	// UnsignedEventID: the signature covers neither the event id nor a
	// time (GitHub, Shopify), so a captured body could be replayed forever
	// under a new id. Admission also deduplicates such events on (endpoint,
	// body SHA-256).
	UnsignedEventID bool
	// UnsignedAccount: Account comes from an unsigned header (Shopify's
	// shop), so admission accepts it only where the endpoint (its own
	// account) or the secret that verified the delivery (its accounts) is
	// bound to it, or the endpoint links that one account alone.
	UnsignedAccount bool
	// Reply, when set, says the verified delivery is no event but a
	// handshake the sender expects an answer to (Slack's url_verification
	// challenge): the intake answers it with Reply and stores nothing, and
	// the other fields are not read. A delivery whose signature fails is
	// refused before Normalize, as any other.
	Reply *Reply
}

// MaxReplyBytes is the longest Reply.Body the intake answers with; a longer
// one is the provider's mistake, and its delivery is quarantined as
// malformed.
const MaxReplyBytes = 4 << 10

// Reply is the answer to a handshake (Normalized.Reply): 200 OK with Body.
type Reply struct {
	// ContentType of Body: a media type; "" is text/plain; charset=utf-8.
	ContentType string
	// Body is answered as it is: at most MaxReplyBytes.
	Body []byte
}

// ReplyText is a handshake's plain-text Reply of body.
func ReplyText(body string) *Reply {
	return &Reply{ContentType: "text/plain; charset=utf-8", Body: []byte(body)}
}

// Unauthenticated is any failed signature check. Reason is for the log;
// the sender only learns 401.
type Unauthenticated struct{ Reason string }

// Error says the check failed and why.
func (e *Unauthenticated) Error() string { return "unauthenticated: " + e.Reason }

// Unauthenticatedf is an *Unauthenticated.
func Unauthenticatedf(format string, args ...any) error {
	return &Unauthenticated{Reason: fmt.Sprintf(format, args...)}
}

// MalformedError marks a verified delivery that cannot be used as it is;
// it is quarantined with Reason as its detail.
type MalformedError struct{ Reason string }

// Error is the reason, as the quarantine records it.
func (e *MalformedError) Error() string { return e.Reason }

// Malformedf is a *MalformedError.
func Malformedf(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// RequireString reads a non-blank string (or number) at path.
func RequireString(doc gjson.Result, path string) (string, error) {
	v := doc.Get(path)
	if !v.Exists() || v.Type == gjson.Null || strings.TrimSpace(v.String()) == "" {
		return "", Malformedf("missing %s", path)
	}
	if v.Type != gjson.String && v.Type != gjson.Number {
		return "", Malformedf("%s is not a string or number", path)
	}
	return v.String(), nil
}

var registry struct {
	sync.RWMutex
	byName map[string]Provider
	names  []string
}

// Register adds p to the registry (providers/all registers the built-in
// ones). A second provider of the same name is a programming error.
func Register(p Provider) {
	registry.Lock()
	defer registry.Unlock()
	if registry.byName == nil {
		registry.byName = map[string]Provider{}
	}
	if _, dup := registry.byName[p.Name()]; dup {
		panic("providers: " + p.Name() + " registered twice")
	}
	registry.byName[p.Name()] = p
	registry.names = append(registry.names, p.Name())
}

// Lookup returns the provider registered as name.
func Lookup(name string) (Provider, bool) {
	registry.RLock()
	defer registry.RUnlock()
	p, ok := registry.byName[name]
	return p, ok
}

// Names lists the registered providers in registration order.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	return append([]string(nil), registry.names...)
}

// ErrUnknown means no provider is registered under that name.
var ErrUnknown = errors.New("unknown provider")

// ValidateSecret checks a secret is usable for provider before it is
// registered.
func ValidateSecret(provider, secret string) error {
	if strings.TrimSpace(secret) == "" {
		return errors.New("secret is empty")
	}
	p, ok := Lookup(provider)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknown, provider)
	}
	return p.CheckSecret(secret)
}

// KeptHeaders are the headers of a delivery to p kept with its quarantine
// entry: Content-Type, User-Agent and those p keeps (the first value of
// each). p may be nil (an endpoint of an unregistered provider).
func KeptHeaders(p Provider, h http.Header) map[string]string {
	out := map[string]string{}
	for name, vals := range h {
		lower := strings.ToLower(name)
		keep := lower == "content-type" || lower == "user-agent" || (p != nil && p.KeepHeader(lower))
		if keep && len(vals) > 0 {
			out[name] = vals[0]
		}
	}
	return out
}

// OneOf lists the registered providers for a message: "a, b or c".
func OneOf() string {
	names := Names()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
