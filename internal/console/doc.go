// Package console serves the operator API (/api/…, JSON, bearer tokens) and
// the web console (server-rendered html/template pages, a session cookie
// holding a random, expiring, revocable session id, and a few lines of
// JavaScript) on the internal listener
// (HOOKINBOX_CONSOLE_ADDR), never on the public webhook port.
//
// Every route has a least role (viewer < operator < admin), checked before
// its handler runs; /api/openapi.json lists them. Every act goes through
// package ops, which validates it (400 with a message, nothing stored) and
// audits it under the token's name. Responses never carry a secret:
// endpoint secrets and API keys appear as fingerprints, payloads only for
// operators who ask (?payload=true).
package console
