package hookintype

import (
	"fmt"
	"net/url"
	"strings"
)

// EventKey identifies one delivered event: the id the sender keeps across
// redeliveries, within its provider, source account and environment. The
// inbox holds a UNIQUE constraint on it, so a redelivery is a duplicate.
// Its String is the form the CLI, the console and the logs use.
type EventKey struct {
	// Provider is the registered provider's name ("stripe", "github", a
	// team's own).
	Provider string `json:"provider"`
	// Account is the source account that sent the event (a Stripe account,
	// a GitHub installation, a Slack team), read from signed data.
	Account string `json:"account"`
	// Environment is Live or Test.
	Environment string `json:"environment"`
	// EventID is the provider's id of the event (Stripe's evt_…, GitHub's
	// X-GitHub-Delivery, Slack's event_id).
	EventID string `json:"event_id"`
}

// String renders the key as provider/account/environment/event_id, each
// part escaped (JoinKey), so that ParseEventKey reads it back.
func (k EventKey) String() string {
	return JoinKey(k.Provider, k.Account, k.Environment, k.EventID)
}

// ParseEventKey is the inverse of EventKey.String.
func ParseEventKey(s string) (EventKey, error) {
	p, err := split(s, 4)
	if err != nil {
		return EventKey{}, fmt.Errorf("event key %q: %w", s, err)
	}
	return EventKey{Provider: p[0], Account: p[1], Environment: p[2], EventID: p[3]}, nil
}

// Resource identifies what an event is about: one subscription, one
// invoice, one Slack channel. One workflow per Resource runs its events,
// one at a time.
type Resource struct {
	// Provider is the provider the resource lives at.
	Provider string `json:"provider"`
	// Account is the source account that owns it.
	Account string `json:"account"`
	// Environment is Live or Test.
	Environment string `json:"environment"`
	// Kind is the provider's kind of object ("subscription", "invoice",
	// "channel").
	Kind string `json:"kind"`
	// ID is the object's id at the provider.
	ID string `json:"id"`
}

// String renders provider/account/environment/kind/id, each part escaped
// (JoinKey), so that ParseResource reads it back.
func (r Resource) String() string {
	return JoinKey(r.Provider, r.Account, r.Environment, r.Kind, r.ID)
}

// ParseResource is the inverse of Resource.String.
func ParseResource(s string) (Resource, error) {
	p, err := split(s, 5)
	if err != nil {
		return Resource{}, fmt.Errorf("resource key %q: %w", s, err)
	}
	return Resource{Provider: p[0], Account: p[1], Environment: p[2], Kind: p[3], ID: p[4]}, nil
}

// Valid reports whether every part is set.
func (r Resource) Valid() bool {
	return r.Provider != "" && r.Account != "" && r.Environment != "" && r.Kind != "" && r.ID != ""
}

// JoinKey renders parts as one key, each part escaped as the event and
// resource keys are (url.PathEscape, which escapes '/' and '%'), so that a
// '/' inside an id can never forge another key. Business and operation
// keys are built with it (hookinbox.Key).
func JoinKey(parts ...string) string {
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = url.PathEscape(p)
	}
	return strings.Join(esc, "/")
}

// split is the inverse of JoinKey for a key of n non-empty parts.
func split(s string, n int) ([]string, error) {
	raw := strings.Split(s, "/")
	if len(raw) != n {
		return nil, fmt.Errorf("want %d parts, got %d", n, len(raw))
	}
	out := make([]string, n)
	for i, p := range raw {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, err
		}
		if u == "" {
			return nil, fmt.Errorf("part %d is empty", i+1)
		}
		out[i] = u
	}
	return out, nil
}
