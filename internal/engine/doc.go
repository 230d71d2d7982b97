// Package engine owns what happens to an inbox event in the worker: the
// handler contract (Handler, Call, Outcome, Set: the business handlers
// themselves live in domains/ and in teams' modules, behind the public
// API), InPendingTx (the handler's transaction holding the row), and the
// store-backed ports the resource activities use to load, route, run and
// complete events (Events) and to reach the providers (EndpointProviders).
// Which (provider, event type) a route takes is internal/routes'. It must
// not import Temporal: retries, backoff and activity errors belong to
// package activities.
package engine
