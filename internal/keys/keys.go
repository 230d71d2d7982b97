// Package keys holds the identities every other package agrees on: the key of
// an accepted event (what the sender keeps across redeliveries) and the key of
// the resource an event is about (what one workflow serializes). It has no
// dependencies but the public hookintype (whose types its identities are) so
// that workflow code, the intake and the store can share it.
package keys

import "github.com/hookinbox/hookinbox/hookintype"

// Event identifies one delivered event: (provider, source account,
// environment, event id). The database holds a UNIQUE constraint on it.
// It is the public hookintype.EventKey: one type inside and out, with the
// JSON recorded histories carry.
type Event = hookintype.EventKey

// ParseEvent is the inverse of Event.String.
func ParseEvent(s string) (Event, error) { return hookintype.ParseEventKey(s) }

// Resource identifies the thing an event is about: one subscription, one
// invoice, one feedback item. One ResourceWorkflow exists per Resource.
// It is the public hookintype.Resource.
type Resource = hookintype.Resource

// ParseResource is the inverse of Resource.String.
func ParseResource(s string) (Resource, error) { return hookintype.ParseResource(s) }

// Join renders parts as one key, each escaped like the event and resource
// keys (business and operation keys use it).
func Join(parts ...string) string { return hookintype.JoinKey(parts...) }
