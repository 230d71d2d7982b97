// Package notify is what a notification is, without the database or
// Temporal: the triggers a rule may watch and what each one's subject is,
// the channels, the grouping of notices into windows (Decide, a pure
// function of the stored state, an observation and the time), the operation
// key that makes one window's notice one outbox intent, and the text and
// JSON document a notice is sent as.
//
// It must stay free of I/O: the store (internal/store/notifications) keeps
// rules and states, storeports evaluates them in short transactions, and
// the worker's outbox sends what they decided.
package notify
