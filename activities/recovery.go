package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/hookinbox/hookinbox/activities/ports"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// PassDeliveries is the checkpoint kind of the delivery recovery: one
// scope per endpoint whose webhook's delivery log it reads.
const PassDeliveries = "deliveries"

// DefaultRecoveryAttempts is how many passes may act on one missing
// delivery before the recovery gives up on it. In redeliver mode the last
// of them fetches the delivery from the log instead, so a receiver GitHub
// cannot reach still gets it.
const DefaultRecoveryAttempts = 3

// RecoverPageInput is one page of a hook's delivery log.
type RecoverPageInput struct {
	PageInput
	// Since: attempts delivered before it are not looked at (the last
	// complete pass's start minus the overlap, or the lookback on a first
	// pass). The listing stops at the first page that reaches it.
	Since time.Time `json:"since"`
	// Attempts bounds the passes that act on one delivery (default
	// DefaultRecoveryAttempts).
	Attempts int `json:"attempts,omitempty"`
}

// RecoverDeliveriesPage lists one page of an endpoint's webhook delivery log
// (GitHub's hook deliveries, newest first) and brings back every delivery
// whose GUID, the inbox event id, never reached hookinbox: not in the inbox
// under any account, not in the endpoint's quarantine. A delivery that did
// reach it is left alone whatever GitHub says of the attempt (a 2xx lost on
// the way back is still in the inbox). Each missing delivery is claimed
// for this pass first (hook_recoveries), so one pass acts on it once, even
// though the log lists each of its attempts and a retried page lists them
// again; then, by the endpoint's mode:
//
//   - redeliver: GitHub is asked to send it again; it reaches the intake
//     signed, with the same X-GitHub-Delivery, and is admitted as a
//     webhook (a copy that arrives twice is a duplicate);
//   - fetch: its request is read from the log and admitted through the
//     one admission path as a backfill (no signature to check: the API
//     call authenticates it), so the event key's UNIQUE constraint
//     settles it against the webhook.
//
// In redeliver mode the last allowed pass fetches instead; after that the
// delivery is abandoned (logged, counted). Every call to GitHub is paced to
// SignalRate per second. The page is then checkpointed.
func (a *ProviderActivities) RecoverDeliveriesPage(ctx context.Context, in RecoverPageInput) (PageResult, error) {
	hook, err := a.Hooks.Hook(ctx, in.Scope.Endpoint)
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list deliveries", err)
	}
	q := providers.ListQuery{Cursor: in.Cursor, Limit: in.Limit}
	page, err := hook.Client.ListDeliveries(ctx, q)
	if hookCursorGone(err, in.Cursor) {
		logger(ctx, a.Logger).Warn("the pass's cursor is no longer valid; listing the delivery log again from the top",
			"checkpoint", in.Checkpoint, "cursor", in.Cursor)
		q.Cursor = ""
		page, err = hook.Client.ListDeliveries(ctx, q)
	}
	if providers.IsNotFound(err) {
		// The hook itself (or its repository) is unknown to the key: no retry helps.
		err = fault.Permanent(err)
	}
	if err != nil {
		return PageResult{}, a.providerFailure(ctx, "list deliveries", err)
	}
	res := PageResult{Listed: len(page.Items)}
	done := !page.HasMore
	// The newest attempt of each delivery on this page, in log order.
	var order []string
	newest := map[string]providers.HookDelivery{}
	for _, d := range page.Items {
		if d.DeliveredAt.Before(in.Since) {
			done = true // newest first: everything after it is older
			continue
		}
		if _, ok := newest[d.GUID]; !ok {
			order = append(order, d.GUID)
			newest[d.GUID] = d
		}
	}
	received, err := a.Recoveries.Received(ctx, in.Scope, order)
	if err != nil {
		return res, err
	}
	attempts := in.Attempts
	if attempts <= 0 {
		attempts = DefaultRecoveryAttempts
	}
	calls := 0
	var ring []keys.Resource
	ringing := map[keys.Resource]keys.Event{}
	for _, guid := range order {
		if received[guid] {
			continue
		}
		d := newest[guid]
		n, claimed, err := a.Recoveries.Claim(ctx, in.Scope.Endpoint, guid, d.ID, in.Owner)
		if err != nil {
			return res, err
		}
		if !claimed {
			continue // this pass already acted on it
		}
		action := recoveryAction(hook.Mode, n, attempts)
		if action == "" {
			continue // abandoned by an earlier pass
		}
		log := logger(ctx, a.Logger).With("endpoint", in.Scope.Endpoint, "delivery", guid, "delivery_attempt", d.ID,
			"event", d.Event, "status_code", d.StatusCode, "pass_attempt", n)
		if action == keys.RecoverRedeliver {
			if err := pace(ctx, in.SignalRate, calls); err != nil {
				return res, err
			}
			calls++
			err := hook.Client.Redeliver(ctx, d.ID)
			if err != nil && !providers.IsPermanent(err) && !providers.IsNotFound(err) {
				return res, a.providerFailure(ctx, "redeliver", err) // retried; claimed, so not asked twice in this pass
			}
			if err == nil {
				if err := a.Recoveries.Record(ctx, in.Scope.Endpoint, guid, keys.RecoverRedeliver); err != nil {
					return res, err
				}
				res.Redelivered++
				log.Info("asked GitHub to redeliver a delivery that never reached the inbox")
				activity.RecordHeartbeat(ctx, calls)
				continue
			}
			log.Warn("GitHub refused the redelivery; fetching the delivery instead", "error", err.Error())
			action = keys.RecoverFetch
		}
		if action == keys.RecoverFetch {
			if err := pace(ctx, in.SignalRate, calls); err != nil {
				return res, err
			}
			calls++
			ad, err, dbErr := a.fetchDelivery(ctx, hook.Client, in.Scope, d)
			if dbErr != nil {
				return res, dbErr // retried: the inserts are idempotent
			}
			switch {
			case err != nil && !providers.IsPermanent(err) && !providers.IsNotFound(err):
				return res, a.providerFailure(ctx, "get delivery", err)
			case err != nil:
				log.Warn("the delivery cannot be read from the log", "error", err.Error())
				// Falls through to the abandoned record below.
			default:
				if err := a.Recoveries.Record(ctx, in.Scope.Endpoint, guid, keys.RecoverFetch); err != nil {
					return res, err
				}
				switch ad.Outcome {
				case ports.Rejected:
					res.Rejected++
					log.Warn("recovery fetched a delivery the intake would not admit", "reason", ad.Reason.Error())
				case ports.Duplicate:
					res.Duplicates++
				default:
					res.Inserted++
					log.Info("recovered a missing delivery from the log", "event_key", ad.Key.String(), "status", ad.Status)
					if r := ad.Resource; ad.Status == keys.StatusPending {
						if _, ok := ringing[r]; !ok {
							ring = append(ring, r)
						}
						ringing[r] = ad.Key
					}
				}
				activity.RecordHeartbeat(ctx, calls)
				continue
			}
		}
		// Abandoned: every allowed pass acted on it and it is still missing.
		if err := a.Recoveries.Record(ctx, in.Scope.Endpoint, guid, ports.RecoveryAbandoned); err != nil {
			return res, err
		}
		res.Abandoned++
		log.Error("gave up recovering a delivery: redeliver it by hand (GitHub: the hook's Recent Deliveries) or replay it")
	}
	for i, r := range ring {
		if err := pace(ctx, in.SignalRate, i); err != nil {
			return res, err
		}
		if err := a.Doorbell.Ring(ctx, r, keys.SignalEvent, ringing[r].String()); err != nil {
			res.SignalFailed++
			logger(ctx, a.Logger).Warn("recovery could not signal; the sweeper will", "resource", r.String(), "error", err.Error())
			continue
		}
		res.Signalled++
	}
	next := page.NextCursor
	if done {
		next = ""
	}
	return a.advance(ctx, in.PageInput, next, done, res, int64(res.Redelivered+res.Inserted))
}

// recoveryAction is what the n-th pass to act on a missing delivery does:
// in redeliver mode, redeliver until the last allowed pass, which fetches;
// in fetch mode, fetch (a rejected one may be admissible once its account
// is linked). One pass past the limit abandons it; later ones do nothing
// ("").
func recoveryAction(mode string, n, limit int) string {
	switch {
	case n > limit+1:
		return ""
	case n == limit+1:
		return ports.RecoveryAbandoned
	case mode == keys.RecoverFetch || n == limit:
		return keys.RecoverFetch
	}
	return keys.RecoverRedeliver
}

// fetchDelivery reads a delivery's request from the log (fetchErr: the
// provider call failed) and admits it as a backfill through the intake's
// own path (err: the database did).
func (a *ProviderActivities) fetchDelivery(ctx context.Context, c providers.HookDeliveries, sc keys.Scope, d providers.HookDelivery) (ad ports.Admission, fetchErr, err error) {
	req, fetchErr := c.GetDelivery(ctx, d.ID)
	if fetchErr != nil {
		return ports.Admission{}, fetchErr, nil
	}
	if got := req.Header.Get("X-GitHub-Delivery"); got != d.GUID {
		return ports.Admission{}, providers.Malformed("get delivery", fmt.Sprintf("the log's request carries delivery %q, not %q", got, d.GUID)), nil
	}
	admitted, err := a.Facts.Admit(ctx, sc.Endpoint, "", []providers.Event{{ID: d.GUID, Type: d.Event, Created: d.DeliveredAt,
		Header: req.Header, Raw: req.Payload}})
	if err != nil {
		return ports.Admission{}, nil, err
	}
	return admitted[0], nil, nil
}

// hookCursorGone reports a listing refused because of its cursor (GitHub
// answers 400 or 422 to a cursor it no longer knows).
func hookCursorGone(err error, cursor string) bool {
	var perr *providers.Error
	return cursor != "" && errors.As(err, &perr) &&
		(perr.StatusCode == http.StatusBadRequest || perr.StatusCode == http.StatusUnprocessableEntity)
}
