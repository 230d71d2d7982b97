// Package hookintype holds the values a team's handler, provider or test
// names: the key of an event (EventKey) and of the resource it is about
// (Resource), a reconciliation's Scope and the Divergences it finds, an
// endpoint's signing Secret and EndpointSettings, the inbox statuses and
// the environments.
//
// It imports the standard library only, and no other hookinbox package,
// so that anything may depend on it: the public API (package hookinbox,
// providers, hookintest), a team's own provider in its own module, and
// hookinbox's internals, which use these very types. River's rivertype is
// the model.
//
// The JSON of EventKey, Resource, Scope and Divergence is part of
// hookinbox's recorded workflow histories, and EndpointSettings' is stored
// with each endpoint: their field names and tags never change.
package hookintype
