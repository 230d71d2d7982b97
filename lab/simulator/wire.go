package simulator

import (
	"encoding/json"
	"time"

	"github.com/stripe/stripe-go/v84"
)

// The wire shapes below follow what stripe-go v84 (API version
// stripe.APIVersion) parses; field order follows Stripe's answers.

type wireList[T any] struct {
	Object     string `json:"object"`
	Data       []T    `json:"data"`
	HasMore    bool   `json:"has_more"`
	TotalCount *int   `json:"total_count,omitempty"`
	URL        string `json:"url"`
}

type wireEvent struct {
	ID              string        `json:"id"`
	Object          string        `json:"object"`
	Account         string        `json:"account,omitempty"`
	APIVersion      string        `json:"api_version"`
	Created         int64         `json:"created"`
	Data            wireEventData `json:"data"`
	Livemode        bool          `json:"livemode"`
	PendingWebhooks int           `json:"pending_webhooks"`
	Request         wireRequest   `json:"request"`
	Type            string        `json:"type"`
}

type wireEventData struct {
	Object             json.RawMessage `json:"object"`
	PreviousAttributes map[string]any  `json:"previous_attributes,omitempty"`
}

type wireRequest struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

type wireInvoice struct {
	ID                string                 `json:"id"`
	Object            string                 `json:"object"`
	AccountCountry    string                 `json:"account_country"`
	AmountDue         int64                  `json:"amount_due"`
	AmountPaid        int64                  `json:"amount_paid"`
	AmountRemaining   int64                  `json:"amount_remaining"`
	AttemptCount      int                    `json:"attempt_count"`
	Attempted         bool                   `json:"attempted"`
	BillingReason     string                 `json:"billing_reason"`
	CollectionMethod  string                 `json:"collection_method"`
	Created           int64                  `json:"created"`
	Currency          string                 `json:"currency"`
	Customer          string                 `json:"customer"`
	Lines             wireList[any]          `json:"lines"`
	Livemode          bool                   `json:"livemode"`
	Metadata          map[string]string      `json:"metadata"`
	Parent            *wireInvoiceParent     `json:"parent"`
	PeriodEnd         int64                  `json:"period_end"`
	PeriodStart       int64                  `json:"period_start"`
	Status            string                 `json:"status"`
	StatusTransitions wireInvoiceTransitions `json:"status_transitions"`
	Subtotal          int64                  `json:"subtotal"`
	Total             int64                  `json:"total"`
}

type wireInvoiceParent struct {
	QuoteDetails        *struct{}                `json:"quote_details"`
	SubscriptionDetails *wireSubscriptionDetails `json:"subscription_details"`
	Type                string                   `json:"type"`
}

type wireSubscriptionDetails struct {
	Metadata     map[string]string `json:"metadata"`
	Subscription string            `json:"subscription"`
}

type wireInvoiceTransitions struct {
	FinalizedAt           *int64 `json:"finalized_at"`
	MarkedUncollectibleAt *int64 `json:"marked_uncollectible_at"`
	PaidAt                *int64 `json:"paid_at"`
	VoidedAt              *int64 `json:"voided_at"`
}

type wireCreditNote struct {
	ID       string            `json:"id"`
	Object   string            `json:"object"`
	Amount   int64             `json:"amount"`
	Created  int64             `json:"created"`
	Currency string            `json:"currency"`
	Customer string            `json:"customer"`
	Invoice  string            `json:"invoice"`
	Lines    wireList[any]     `json:"lines"`
	Livemode bool              `json:"livemode"`
	Memo     *string           `json:"memo"`
	Metadata map[string]string `json:"metadata"`
	Number   string            `json:"number"`
	Reason   *string           `json:"reason"`
	Status   string            `json:"status"`
	Subtotal int64             `json:"subtotal"`
	Total    int64             `json:"total"`
	Type     string            `json:"type"`
	VoidedAt *int64            `json:"voided_at"`
}

type wireSubscription struct {
	ID                  string                `json:"id"`
	Object              string                `json:"object"`
	BillingCycleAnchor  int64                 `json:"billing_cycle_anchor"`
	CancelAt            *int64                `json:"cancel_at"`
	CancelAtPeriodEnd   bool                  `json:"cancel_at_period_end"`
	CanceledAt          *int64                `json:"canceled_at"`
	CancellationDetails wireCancellation      `json:"cancellation_details"`
	CollectionMethod    string                `json:"collection_method"`
	Created             int64                 `json:"created"`
	Currency            string                `json:"currency"`
	Customer            string                `json:"customer"`
	EndedAt             *int64                `json:"ended_at"`
	Items               wireList[wireSubItem] `json:"items"`
	LatestInvoice       *string               `json:"latest_invoice"`
	Livemode            bool                  `json:"livemode"`
	Metadata            map[string]string     `json:"metadata"`
	StartDate           int64                 `json:"start_date"`
	Status              string                `json:"status"`
	TrialEnd            *int64                `json:"trial_end"`
	TrialStart          *int64                `json:"trial_start"`
	Version             *int64                `json:"version,omitempty"`
}

type wireCancellation struct {
	Comment  *string `json:"comment"`
	Feedback *string `json:"feedback"`
	Reason   *string `json:"reason"`
}

type wireSubItem struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Created            int64             `json:"created"`
	CurrentPeriodEnd   int64             `json:"current_period_end"`
	CurrentPeriodStart int64             `json:"current_period_start"`
	Metadata           map[string]string `json:"metadata"`
	Price              wirePrice         `json:"price"`
	Quantity           int64             `json:"quantity"`
	Subscription       string            `json:"subscription"`
}

type wirePrice struct {
	ID         string        `json:"id"`
	Object     string        `json:"object"`
	Active     bool          `json:"active"`
	Currency   string        `json:"currency"`
	Product    string        `json:"product"`
	Recurring  wireRecurring `json:"recurring"`
	Type       string        `json:"type"`
	UnitAmount int64         `json:"unit_amount"`
}

type wireRecurring struct {
	Interval      string `json:"interval"`
	IntervalCount int    `json:"interval_count"`
}

type wireFeedback struct {
	Type      string           `json:"type"`
	Timestamp string           `json:"timestamp"`
	Data      wireFeedbackData `json:"data"`
}

type wireFeedbackData struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	Message   string `json:"message"`
	CreatedAt string `json:"created_at"`
}

// wireFollowUp is a feedback item's comment or vote message.
type wireFollowUp struct {
	Type      string           `json:"type"`
	Timestamp string           `json:"timestamp"`
	Data      wireFollowUpData `json:"data"`
}

type wireFollowUpData struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	CommentID string `json:"comment_id,omitempty"`
	Text      string `json:"text,omitempty"`
	VoteID    string `json:"vote_id,omitempty"`
	Voter     string `json:"voter,omitempty"`
}

type wireError struct {
	Error wireErrorBody `json:"error"`
}

type wireErrorBody struct {
	Code    string `json:"code,omitempty"`
	DocURL  string `json:"doc_url,omitempty"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	Type    string `json:"type"`
}

func unixOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("simulator: marshal: " + err.Error()) // only our own plain structs are marshalled
	}
	return b
}

func (s *Simulator) invoiceWire(inv *Invoice) wireInvoice {
	paid := inv.PaidAt.Unix()
	w := wireInvoice{
		ID:               inv.ID,
		Object:           "invoice",
		AccountCountry:   "US",
		AmountDue:        inv.AmountPaid,
		AmountPaid:       inv.AmountPaid,
		AttemptCount:     1,
		Attempted:        true,
		BillingReason:    "manual",
		CollectionMethod: "charge_automatically",
		Created:          inv.Created.Unix(),
		Currency:         inv.Currency,
		Customer:         inv.Customer,
		Lines:            wireList[any]{Object: "list", Data: []any{}, URL: "/v1/invoices/" + inv.ID + "/lines"},
		Livemode:         s.cfg.Livemode,
		Metadata:         map[string]string{},
		PeriodEnd:        inv.Created.Unix(),
		PeriodStart:      inv.Created.Unix(),
		Status:           inv.Status,
		StatusTransitions: wireInvoiceTransitions{
			FinalizedAt: &paid,
			PaidAt:      &paid,
		},
		Subtotal: inv.AmountPaid,
		Total:    inv.AmountPaid,
	}
	if inv.Subscription != "" {
		w.BillingReason = "subscription_cycle"
		w.Parent = &wireInvoiceParent{
			SubscriptionDetails: &wireSubscriptionDetails{Metadata: map[string]string{}, Subscription: inv.Subscription},
			Type:                "subscription_details",
		}
	}
	return w
}

func (s *Simulator) creditNoteWire(cn *CreditNote) wireCreditNote {
	reason := "order_change"
	return wireCreditNote{
		ID: cn.ID, Object: "credit_note", Amount: cn.Total, Created: cn.Created.Unix(), Currency: cn.Currency,
		Customer: cn.Customer, Invoice: cn.Invoice,
		Lines:    wireList[any]{Object: "list", Data: []any{}, URL: "/v1/credit_notes/" + cn.ID + "/lines"},
		Livemode: s.cfg.Livemode, Metadata: map[string]string{}, Number: "SIM-" + cn.ID[len(cn.ID)-6:],
		Reason: &reason, Status: cn.Status, Subtotal: cn.Total, Total: cn.Total, Type: "post_payment",
		VoidedAt: unixOrNil(cn.VoidedAt),
	}
}

func (s *Simulator) subscriptionWire(sub *Subscription, snap SubscriptionSnapshot) wireSubscription {
	w := wireSubscription{
		ID:                 sub.ID,
		Object:             "subscription",
		BillingCycleAnchor: sub.Created.Unix(),
		CancelAtPeriodEnd:  snap.CancelAtPeriodEnd,
		CanceledAt:         unixOrNil(snap.CanceledAt),
		CollectionMethod:   "charge_automatically",
		Created:            sub.Created.Unix(),
		Currency:           DefaultCurrency,
		Customer:           sub.Customer,
		EndedAt:            unixOrNil(snap.EndedAt),
		Items: wireList[wireSubItem]{
			Object: "list",
			Data: []wireSubItem{{
				ID:                 sub.itemID,
				Object:             "subscription_item",
				Created:            sub.Created.Unix(),
				CurrentPeriodEnd:   snap.CurrentPeriodEnd.Unix(),
				CurrentPeriodStart: snap.CurrentPeriodStart.Unix(),
				Metadata:           map[string]string{},
				Price: wirePrice{
					ID: "price_sim_pro", Object: "price", Active: true, Currency: DefaultCurrency,
					Product: "prod_sim_pro", Recurring: wireRecurring{Interval: "month", IntervalCount: 1},
					Type: "recurring", UnitAmount: DefaultAmount,
				},
				Quantity:     1,
				Subscription: sub.ID,
			}},
			TotalCount: ptr(1),
			URL:        "/v1/subscription_items?subscription=" + sub.ID,
		},
		Livemode:  s.cfg.Livemode,
		Metadata:  map[string]string{},
		StartDate: sub.Created.Unix(),
		Status:    snap.Status,
	}
	if snap.CancelAtPeriodEnd {
		w.CancelAt = unixOrNil(snap.CurrentPeriodEnd)
	}
	if !snap.CanceledAt.IsZero() {
		reason := "cancellation_requested"
		w.CancellationDetails.Reason = &reason
	}
	if !snap.TrialEnd.IsZero() {
		w.TrialStart = unixOrNil(sub.Created)
		w.TrialEnd = unixOrNil(snap.TrialEnd)
	}
	if s.cfg.Versions {
		v := snap.Version
		w.Version = &v
	}
	return w
}

// previousAttributes lists the top-level fields an update changed, with
// their old values, as Stripe's data.previous_attributes does.
func previousAttributes(old, cur wireSubscription) map[string]any {
	prev := map[string]any{}
	if old.Status != cur.Status {
		prev["status"] = old.Status
	}
	if old.CancelAtPeriodEnd != cur.CancelAtPeriodEnd {
		prev["cancel_at_period_end"] = old.CancelAtPeriodEnd
	}
	if !eqPtr(old.CancelAt, cur.CancelAt) {
		prev["cancel_at"] = old.CancelAt
	}
	if !eqPtr(old.CanceledAt, cur.CanceledAt) {
		prev["canceled_at"] = old.CanceledAt
	}
	if !eqPtr(old.EndedAt, cur.EndedAt) {
		prev["ended_at"] = old.EndedAt
	}
	if old.Items.Data[0].CurrentPeriodEnd != cur.Items.Data[0].CurrentPeriodEnd {
		prev["items"] = old.Items
	}
	if old.Version != nil && cur.Version != nil && *old.Version != *cur.Version {
		prev["version"] = *old.Version
	}
	if len(prev) == 0 {
		return nil
	}
	return prev
}

func (s *Simulator) eventBody(id, typ, account string, created time.Time, object any, prev map[string]any) []byte {
	w := wireEvent{
		ID:              id,
		Object:          "event",
		APIVersion:      stripe.APIVersion,
		Created:         created.Unix(),
		Data:            wireEventData{Object: mustJSON(object), PreviousAttributes: prev},
		Livemode:        s.cfg.Livemode,
		PendingWebhooks: 1,
		Type:            typ,
	}
	if s.cfg.Connect {
		w.Account = account
	}
	return mustJSON(w)
}

// thinTimeFormat is how a thin event writes created: ISO 8601 in UTC with
// milliseconds, as Stripe's v2 API does.
const thinTimeFormat = "2006-01-02T15:04:05.000Z"

// wireThinEvent is a thin event (docs.stripe.com/api/v2/core/events/object),
// as an event destination delivers it and GET /v2/core/events/{id} answers.
type wireThinEvent struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Context       *string           `json:"context"`
	Created       string            `json:"created"`
	Livemode      bool              `json:"livemode"`
	Reason        *struct{}         `json:"reason"`
	RelatedObject wireRelatedObject `json:"related_object"`
	SnapshotEvent string            `json:"snapshot_event,omitempty"`
	Type          string            `json:"type"`
}

type wireRelatedObject struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	URL  string `json:"url"`
}

// thinBody is the thin event of t: the object it names and, with Connect,
// the account as its context (null otherwise, as for an account's own
// events).
func (s *Simulator) thinBody(t *Event) []byte {
	w := wireThinEvent{
		ID: t.ID, Object: "v2.core.event", Created: t.Created.UTC().Format(thinTimeFormat), Livemode: s.cfg.Livemode,
		RelatedObject: wireRelatedObject{ID: t.ResourceID, Type: t.ResourceKind, URL: "/v1/" + t.ResourceKind + "s/" + t.ResourceID},
		SnapshotEvent: t.Snapshot, Type: t.Type,
	}
	if s.cfg.Connect {
		w.Context = &t.Account
	}
	return mustJSON(w)
}

func feedbackBody(item *FeedbackItem, at time.Time) []byte {
	return mustJSON(wireFeedback{
		Type:      "feedback.created",
		Timestamp: at.UTC().Format(time.RFC3339),
		Data: wireFeedbackData{
			ID:        item.ID,
			ProjectID: item.Project,
			Message:   item.Message,
			CreatedAt: item.CreatedAt.UTC().Format(time.RFC3339),
		},
	})
}

func ptr[T any](v T) *T { return &v }

func eqPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
