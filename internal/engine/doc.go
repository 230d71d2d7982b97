// Package engine owns what happens to an inbox event: the registry of
// the (provider, event type) pairs hookinbox handles (For), one file per
// business handler (credits, subscriptions with their reconciliation,
// feedback alerts), and the store-backed ports the resource activities use
// to load, route and complete events (Events). The intake asks For to
// decide handled or ignored; the worker runs the handlers through Events.
// It must not import Temporal: retries, backoff and activity errors belong
// to package activities.
package engine
