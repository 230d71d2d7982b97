package admission

import (
	"crypto/sha256"
	"net/http"

	"github.com/hookinbox/hookinbox/handlers"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/providers"
)

// Rejection is why an authenticated delivery cannot become an inbox event
// as it is; Reason is its quarantine reason.
type Rejection struct {
	Reason string
	Detail string
}

func (r *Rejection) Error() string { return r.Reason + ": " + r.Detail }

// derive turns an authenticated delivery into the inbox event to store,
// with the endpoint's current settings and links: event key, environment,
// source account, workspace, type, resource, version, and status (pending,
// or ignored for a type no handler takes). raw is the body as received
// (kept and hashed); payload the JSON inside it (they differ only for
// GitHub's form-encoded deliveries). scope, when set, is the account the
// delivery was listed under (the backfill): an event naming no account is
// that account's, never the endpoint's own. It does no I/O.
//
// On rejection the returned event still carries the key parts that could be
// derived (for the quarantine row); err is a *Rejection, or another error for
// a provider without a normalizer.
func derive(ep *store.Endpoint, p providers.Provider, h http.Header, payload, raw []byte, scope string) (*store.InboxEvent, error) {
	sum := sha256.Sum256(raw)
	ev := &store.InboxEvent{EndpointSlug: ep.Slug, Payload: raw, BodySHA256: sum[:], Key: keys.Event{Provider: ep.Provider}}
	n, err := normalize(ep, p, h, payload)
	if err != nil {
		if bad, ok := isMalformed(err); ok {
			return ev, &Rejection{Reason: store.ReasonMalformed, Detail: bad.Reason}
		}
		return ev, err
	}
	ev.Key.EventID = n.EventID
	if n.Environment != "" && n.Environment != ep.Environment {
		ev.Key.Environment = n.Environment
		return ev, &Rejection{Reason: store.ReasonEnvironmentMismatch, Detail: "a " + n.Environment + " event on a " + ep.Environment + " endpoint"}
	}
	ev.Key.Environment = ep.Environment
	account := n.Account
	if account == "" && scope != "" {
		account = scope
	}
	if account == "" {
		account, _ = ep.OwnAccount()
	}
	ev.Key.Account = account
	workspace, linked := ep.Links[account]
	if !linked || account == "" {
		return ev, &Rejection{Reason: store.ReasonUnknownAccount,
			Detail: "source account " + orDefault(account, "(none: the endpoint has no own account)") + " is not linked to a workspace"}
	}
	_, handled := handlers.For(ep.Provider, n.EventType)
	kind, id, err := n.resourceOrFallback(handled)
	if err != nil {
		return ev, &Rejection{Reason: store.ReasonMalformed, Detail: err.Error()}
	}
	ev.WorkspaceID, ev.EventType, ev.ResourceKind, ev.ResourceID = workspace, n.EventType, kind, id
	ev.ProviderVersion, ev.OccurredAt, ev.ObjectID = n.version, n.OccurredAt, n.ObjectID
	ev.Status = keys.StatusPending
	if !handled {
		ev.Status = keys.StatusIgnored
		ev.LastError = "no handler for " + ep.Provider + " event type " + n.EventType
	}
	return ev, nil
}
