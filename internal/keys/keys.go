// Package keys holds the identities every other package agrees on: the key of
// an accepted event (what the sender keeps across redeliveries) and the key of
// the resource an event is about (what one workflow serializes). It has no
// dependencies so that workflow code, the intake and the store can share it.
package keys

import (
	"fmt"
	"net/url"
	"strings"
)

// Event identifies one delivered event: (provider, source account,
// environment, event id). The database holds a UNIQUE constraint on it.
type Event struct {
	Provider    string `json:"provider"`
	Account     string `json:"account"`
	Environment string `json:"environment"`
	EventID     string `json:"event_id"`
}

// String renders the key as provider/account/environment/event_id with each
// part escaped, so it can be logged, used as an activity summary and parsed
// back by ParseEvent.
func (e Event) String() string {
	return join(e.Provider, e.Account, e.Environment, e.EventID)
}

// ParseEvent is the inverse of Event.String.
func ParseEvent(s string) (Event, error) {
	p, err := split(s, 4)
	if err != nil {
		return Event{}, fmt.Errorf("event key %q: %w", s, err)
	}
	return Event{Provider: p[0], Account: p[1], Environment: p[2], EventID: p[3]}, nil
}

// Resource identifies the thing an event is about: one subscription, one
// invoice, one feedback item. One ResourceWorkflow exists per Resource.
type Resource struct {
	Provider    string `json:"provider"`
	Account     string `json:"account"`
	Environment string `json:"environment"`
	Kind        string `json:"kind"`
	ID          string `json:"id"`
}

// String renders provider/account/environment/kind/id with each part escaped.
func (r Resource) String() string {
	return join(r.Provider, r.Account, r.Environment, r.Kind, r.ID)
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

// Join renders parts as one key, each escaped like the event and resource
// keys (business and operation keys use it).
func Join(parts ...string) string { return join(parts...) }

// join escapes each part with url.PathEscape, which escapes '/' and '%', so
// a '/' inside an id can never forge another key.
func join(parts ...string) string {
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = url.PathEscape(p)
	}
	return strings.Join(esc, "/")
}

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
