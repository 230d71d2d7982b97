// Package ops is the one implementation of the operator's acts, shared by
// the CLI (internal/command, which imports no store package) and the
// operator API and console (package console): inbox search and event
// detail, replay (one event, a list of keys, or a persisted bulk job),
// quarantine review and resolution, outbox release, endpoint and workspace
// management (balance corrections and erasure included), the secrets
// key's reseal, the database roles' grants, schedules, status, API tokens,
// and lineage ("explain": from an effect to every delivery, the workflow
// and the operator acts behind it).
//
// Every change of state is audited in operator_actions under the acting
// operator's name (a CLI user's --by, an API token's name). Views never
// carry a secret: endpoint secrets and API keys appear as fingerprints, and
// payloads only when a caller asks for them (the API checks the role).
//
// It validates its inputs and answers bad ones with an *InvalidError (the
// CLI's exit status 2, the API's 400) before anything is stored. It holds
// no HTTP or command-line code.
package ops
