// Package outbox holds the statements of the outbox: intents recorded in a
// business transaction (once per operation key), the attempts and outcomes
// of their sends, the team destinations they go to, and retention.
package outbox
