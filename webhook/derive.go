package webhook

import (
	"crypto/sha256"
	"errors"
	"net/http"

	"github.com/hookinbox/hookinbox/handlers"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

// Rejection is why an authenticated delivery cannot become an inbox event
// as it is; Reason is its quarantine reason.
type Rejection struct {
	Reason string
	Detail string
}

func (r *Rejection) Error() string { return r.Reason + ": " + r.Detail }

// Derive turns an authenticated delivery into the inbox event the intake
// stores, with the endpoint's current settings and links: event key,
// environment, source account, workspace, type, resource, version, and
// status (pending, or ignored for a type no handler takes). raw is the body
// as received (kept and hashed); payload the JSON inside it (they differ only
// for GitHub's form-encoded deliveries). It does no I/O, so the intake, the
// quarantine's re-admission and the facts backfill share it.
//
// On rejection the returned event still carries the key parts that could be
// derived (for the quarantine row); err is a *Rejection, or another error for
// a provider without a normalizer.
func Derive(ep *store.Endpoint, h http.Header, payload, raw []byte) (*store.InboxEvent, error) {
	sum := sha256.Sum256(raw)
	ev := &store.InboxEvent{EndpointSlug: ep.Slug, Payload: raw, BodySHA256: sum[:], Key: keys.Event{Provider: ep.Provider}}
	n, err := normalize(ep, h, payload)
	if err != nil {
		var bad errMalformed
		if errors.As(err, &bad) {
			return ev, &Rejection{Reason: store.ReasonMalformed, Detail: bad.reason}
		}
		return ev, err
	}
	ev.Key.EventID = n.eventID
	if n.environment != "" && n.environment != ep.Environment {
		ev.Key.Environment = n.environment
		return ev, &Rejection{Reason: store.ReasonEnvironmentMismatch, Detail: "a " + n.environment + " event on a " + ep.Environment + " endpoint"}
	}
	ev.Key.Environment = ep.Environment
	account := n.account
	if account == "" {
		account, _ = ep.OwnAccount()
	}
	ev.Key.Account = account
	workspace, linked := ep.Links[account]
	if !linked || account == "" {
		return ev, &Rejection{Reason: store.ReasonUnknownAccount,
			Detail: "source account " + orDefault(account, "(none: the endpoint has no own account)") + " is not linked to a workspace"}
	}
	_, handled := handlers.For(ep.Provider, n.eventType)
	kind, id, err := n.resourceOrFallback(handled)
	if err != nil {
		return ev, &Rejection{Reason: store.ReasonMalformed, Detail: err.Error()}
	}
	ev.WorkspaceID, ev.EventType, ev.ResourceKind, ev.ResourceID = workspace, n.eventType, kind, id
	ev.ProviderVersion, ev.OccurredAt = n.version, n.occurredAt
	ev.Status = keys.StatusPending
	if !handled {
		ev.Status = keys.StatusIgnored
		ev.LastError = "no handler for " + ep.Provider + " event type " + n.eventType
	}
	return ev, nil
}
