// Package admission is the one path into the inbox (SPEC R1–R7, R19, R20):
// every delivery, whether it came to the HTTP intake, was listed by the
// backfill from the provider's API or is re-admitted from the quarantine,
// goes through the same steps: verify (with the endpoint's provider,
// package providers) → normalize → derive (the tenant from the registered
// link of the verified source account, never from an id in the payload) →
// insert one inbox row (the event key's UNIQUE constraint settles
// duplicates) or quarantine → ring the resource's doorbell. It is the only
// caller of store.InsertInboxEvent.
//
// What differs by origin:
//
//	step              webhook                      backfill                   quarantine (Readmit)
//	verify            provider's verifier, raw     none: the bytes come from  none: verified when it
//	                  bytes; reload secrets once   the authenticated API      arrived
//	derive refused    quarantined with its reason  error, nothing stored      ErrCannotReadmit, entry open
//	same key, other   quarantined (conflicting     Duplicate ("already have   ErrCannotReadmit
//	body              duplicate), unless the row   it") if the same event,
//	                  was backfilled and is the    else refused (conflicting
//	                  same event: Duplicate        duplicate)
//	doorbell          Options.Handoff (async)      the caller (paced)         the caller
//
// It does no HTTP (package webhook maps its results to status codes) and
// never waits on Temporal: the hand-off it rings must not block. It never
// logs payloads.
package admission
