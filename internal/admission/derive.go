package admission

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/providers"
)

// Rejection is why an authenticated delivery cannot become an inbox event
// as it is; Reason is its quarantine reason.
type Rejection struct {
	Reason string
	Detail string
}

func (r *Rejection) Error() string { return r.Reason + ": " + r.Detail }

// handshake is derive's answer for a delivery the provider normalized as a
// handshake (providers.Normalized.Reply): no inbox event. The intake
// answers it; every other path refuses it as this error.
type handshake struct{ reply *providers.Reply }

func (h *handshake) Error() string {
	return "a handshake the sender expects an answer to, not an event: nothing to store"
}

// derive turns an authenticated delivery into the inbox event to store,
// with the endpoint's current settings and links: event key, environment,
// source account, workspace, type, resource, version, and status (pending,
// or ignored for a type no handler takes). raw is the body as received
// (kept and hashed); payload the JSON inside it (they differ only for
// GitHub's form-encoded deliveries). scope, when set, is the account the
// delivery was listed under (the backfill): an event naming no account is
// that account's, never the endpoint's own. It does no I/O.
//
// secretID is the secret that verified the delivery (0: none, e.g. the
// backfill, whose bytes come from the provider's API): the account the
// delivery claims must be one that secret may sign for, and an account read
// from an unsigned header must be bound (checkBinding).
//
// On rejection the returned event still carries the key parts that could be
// derived (for the quarantine row); err is a *Rejection, a *handshake for a
// delivery that is none (the provider's Reply), or another error for a
// provider without a normalizer.
func derive(rt routes.Router, ep *endpoints.Endpoint, p providers.Provider, h http.Header, payload, raw []byte, secretID int64, scope string) (*inbox.InboxEvent, error) {
	sum := sha256.Sum256(raw)
	ev := &inbox.InboxEvent{EndpointSlug: ep.Slug, Payload: raw, BodySHA256: sum[:], Key: keys.Event{Provider: ep.Provider}}
	n, err := normalize(ep, p, h, payload)
	if err != nil {
		if bad, ok := isMalformed(err); ok {
			return ev, &Rejection{Reason: inbox.ReasonMalformed, Detail: bad.Reason}
		}
		return ev, err
	}
	if n.Reply != nil {
		return ev, &handshake{reply: n.Reply}
	}
	ev.Key.EventID, ev.DedupBody = n.EventID, n.UnsignedEventID
	if n.Environment != "" && n.Environment != ep.Environment {
		ev.Key.Environment = n.Environment
		return ev, &Rejection{Reason: inbox.ReasonEnvironmentMismatch, Detail: "a " + n.Environment + " event on a " + ep.Environment + " endpoint"}
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
	if rej := checkBinding(ep, secretID, account, n.UnsignedAccount); rej != nil {
		return ev, rej
	}
	workspace, linked := ep.Links[account]
	if !linked || account == "" {
		return ev, &Rejection{Reason: inbox.ReasonUnknownAccount,
			Detail: "source account " + orDefault(account, "(none: the endpoint has no own account)") + " is not linked to a workspace"}
	}
	var route routes.Route
	handled := false
	if rt != nil {
		// A provider may route a type as another (Stripe's thin v1.* types
		// as their snapshot type).
		route, handled = rt.Route(ep.Provider, providers.RouteType(p, n.EventType))
	}
	if handled && route.Resource != nil {
		if err := n.serializeOn(*route.Resource, payload); err != nil {
			return ev, &Rejection{Reason: inbox.ReasonMalformed, Detail: err.Error()}
		}
	}
	kind, id, err := n.resourceOrFallback(handled)
	if err != nil {
		return ev, &Rejection{Reason: inbox.ReasonMalformed, Detail: err.Error()}
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

// checkBinding refuses a delivery claiming an account it may not claim:
// one the secret that verified it is not bound to (so one tenant holding an
// endpoint's secret cannot sign events into another tenant's workspace), or,
// for an account read from an unsigned header (Shopify's shop), one that
// the secret's binding, else the endpoint's own account, does not name. With neither
// binding, an unsigned account is only trusted while the endpoint links
// exactly one account (which it must then be, or it is unknown).
func checkBinding(ep *endpoints.Endpoint, secretID int64, account string, unsignedAccount bool) *Rejection {
	var sec *keys.Secret
	for i := range ep.Secrets {
		if secretID != 0 && ep.Secrets[i].ID == secretID {
			sec = &ep.Secrets[i]
		}
	}
	if sec != nil && !sec.MayClaim(account) {
		return &Rejection{Reason: inbox.ReasonAccountMismatch, Detail: fmt.Sprintf(
			"secret #%d may sign for %s only; the delivery claims source account %s", sec.ID,
			strings.Join(sec.Accounts, ", "), orDefault(account, "(none)"))}
	}
	if !unsignedAccount {
		return nil
	}
	switch {
	case sec != nil && len(sec.Accounts) > 0:
		// Checked above: the secret's own binding is the most specific, and
		// wins over the endpoint's own account (which a second link may
		// have pinned to the first shop, store.Link).
	case ep.Account != "":
		if account != ep.Account {
			return &Rejection{Reason: inbox.ReasonAccountMismatch, Detail: fmt.Sprintf(
				"the unsigned account header names %s; endpoint %s is bound to %s", orDefault(account, "(none)"), ep.Slug, ep.Account)}
		}
	case len(ep.Links) > 1:
		return &Rejection{Reason: inbox.ReasonAccountMismatch, Detail: fmt.Sprintf(
			"the account header (%s) is not signed and endpoint %s links %d accounts: bind one to the endpoint "+
				"(--account) or to each secret (endpoints secrets bind)", orDefault(account, "none"), ep.Slug, len(ep.Links))}
	}
	return nil
}
