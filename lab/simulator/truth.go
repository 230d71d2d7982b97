package simulator

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Stats counts what the simulator did. Delivery counters are per planned
// delivery unless named for attempts or responses.
type Stats struct {
	Planned         int         `json:"planned"`
	Dropped         int         `json:"dropped"`
	Duplicates      int         `json:"duplicates"`
	Conflicts       int         `json:"conflicts"`
	Delayed         int         `json:"delayed"`
	Reordered       int         `json:"reordered"`
	Attempts        int         `json:"attempts"`
	Responses2xx    int         `json:"responses_2xx"`
	ResponsesNon2xx int         `json:"responses_non_2xx"`
	TransportErrors int         `json:"transport_errors"`
	Timeouts        int         `json:"timeouts"`
	Retries         int         `json:"retries"`
	Acked           int         `json:"acked"`
	Exhausted       int         `json:"exhausted"`
	Canceled        int         `json:"canceled"`
	Skipped         int         `json:"skipped"`
	StatusCodes     map[int]int `json:"status_codes,omitempty"`
	API             APIStats    `json:"api"`
	Email           EmailStats  `json:"email"`
}

// APIStats counts Stripe API requests and the faults served.
type APIStats struct {
	Requests     int `json:"requests"`
	Unauthorized int `json:"unauthorized"`
	Errors5xx    int `json:"errors_5xx"`
	RateLimited  int `json:"rate_limited"`
	NotFound     int `json:"not_found"`
	Forbidden    int `json:"forbidden"`
	// ScopedByAccount and ScopedByContext count the requests that named
	// their account with Stripe-Account and with Stripe-Context.
	ScopedByAccount int `json:"scoped_by_account"`
	ScopedByContext int `json:"scoped_by_context"`
}

// EmailStats counts the email API's work.
type EmailStats struct {
	Posts       int `json:"posts"`
	Accepted    int `json:"accepted"`
	Deduped     int `json:"deduped"`
	LostAnswers int `json:"lost_answers"`
}

func (st Stats) clone() Stats {
	st.StatusCodes = maps.Clone(st.StatusCodes)
	return st
}

// Stats returns the running totals of every delivery, API call and email.
func (s *Simulator) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats.clone()
}

// Plus is the sum of two simulators' delivery and API counters (status
// codes merged); Email is left as s's, since only one simulator serves
// the email API in a run.
func (s Stats) Plus(o Stats) Stats {
	s.Planned += o.Planned
	s.Dropped += o.Dropped
	s.Duplicates += o.Duplicates
	s.Conflicts += o.Conflicts
	s.Delayed += o.Delayed
	s.Reordered += o.Reordered
	s.Attempts += o.Attempts
	s.Responses2xx += o.Responses2xx
	s.ResponsesNon2xx += o.ResponsesNon2xx
	s.TransportErrors += o.TransportErrors
	s.Timeouts += o.Timeouts
	s.Retries += o.Retries
	s.Acked += o.Acked
	s.Exhausted += o.Exhausted
	s.Canceled += o.Canceled
	s.Skipped += o.Skipped
	codes := make(map[int]int, len(s.StatusCodes)+len(o.StatusCodes))
	for _, m := range []map[int]int{s.StatusCodes, o.StatusCodes} {
		for c, n := range m {
			codes[c] += n
		}
	}
	s.StatusCodes = codes
	s.API.Requests += o.API.Requests
	s.API.Unauthorized += o.API.Unauthorized
	s.API.Errors5xx += o.API.Errors5xx
	s.API.RateLimited += o.API.RateLimited
	s.API.NotFound += o.API.NotFound
	s.API.Forbidden += o.API.Forbidden
	s.API.ScopedByAccount += o.API.ScopedByAccount
	s.API.ScopedByContext += o.API.ScopedByContext
	return s
}

// Truth is what a correct receiver ends up with for everything the simulator
// holds. Lists are in creation order.
type Truth struct {
	Seed          uint64              `json:"seed"`
	Connect       bool                `json:"connect"`
	Livemode      bool                `json:"livemode"`
	Versions      bool                `json:"versions"`
	Accounts      []string            `json:"accounts"`
	Projects      []string            `json:"projects"`
	PaidInvoices  []TruthInvoice      `json:"paid_invoices"`
	Subscriptions []TruthSubscription `json:"subscriptions"`
	Feedback      []TruthFeedback     `json:"feedback"`
	// CreditNotes on paid invoices, issued or void now.
	CreditNotes []TruthCreditNote `json:"credit_notes"`
	// DroppedEvents are Stripe events that no delivery ever carried (dropped
	// on purpose or never sent): only reconciliation can recover them.
	DroppedEvents []TruthEvent `json:"dropped_events"`
	// UnackedEvents were sent but never answered with a 2xx.
	UnackedEvents []TruthEvent `json:"unacknowledged_events"`
	Stats         Stats        `json:"stats"`
}

// TruthInvoice is a paid invoice: the credit it must grant, once.
type TruthInvoice struct {
	Account      string   `json:"account"`
	ID           string   `json:"id"`
	Customer     string   `json:"customer"`
	Subscription string   `json:"subscription,omitempty"`
	Amount       int64    `json:"amount"`
	Currency     string   `json:"currency"`
	EventIDs     []string `json:"event_ids"`
}

// TruthSubscription is the latest state of a subscription. Version is set
// only when versions are on; times are unix seconds (0: null).
type TruthSubscription struct {
	Account           string `json:"account"`
	ID                string `json:"id"`
	Customer          string `json:"customer"`
	Status            string `json:"status"`
	CancelAtPeriodEnd bool   `json:"cancel_at_period_end"`
	CurrentPeriodEnd  int64  `json:"current_period_end"`
	CanceledAt        int64  `json:"canceled_at"`
	EndedAt           int64  `json:"ended_at"`
	Version           *int64 `json:"version,omitempty"`
	Access            bool   `json:"access"`
	LastEventID       string `json:"last_event_id"`
}

// TruthCreditNote is a credit note: while issued, it takes back
// floor(credits per invoice × Total / InvoiceTotal) of its invoice's grant;
// void, nothing (what it took is given back).
type TruthCreditNote struct {
	Account      string   `json:"account"`
	ID           string   `json:"id"`
	Invoice      string   `json:"invoice"`
	Total        int64    `json:"total"`
	InvoiceTotal int64    `json:"invoice_total"`
	Status       string   `json:"status"`
	EventIDs     []string `json:"event_ids"`
	VoidEventIDs []string `json:"void_event_ids,omitempty"`
}

// TruthFeedback is a feedback item: one initial alert each; its comments
// (one operation each, whatever its events) and votes.
type TruthFeedback struct {
	Project  string    `json:"project"`
	ID       string    `json:"id"`
	EventID  string    `json:"event_id"`
	Comments []Comment `json:"comments,omitempty"`
	Votes    []Vote    `json:"votes,omitempty"`
}

// TruthEvent names an event.
type TruthEvent struct {
	Provider   string `json:"provider"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	Account    string `json:"account"`
	ResourceID string `json:"resource_id"`
}

// Truth computes the ground truth now.
func (s *Simulator) Truth() Truth {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock()
	t := Truth{
		Seed: s.cfg.Seed, Connect: s.cfg.Connect, Livemode: s.cfg.Livemode, Versions: s.cfg.Versions,
		Accounts: slices.Clone(s.accounts), Projects: slices.Clone(s.cfg.Projects),
		PaidInvoices: []TruthInvoice{}, Subscriptions: []TruthSubscription{}, Feedback: []TruthFeedback{},
		CreditNotes:   []TruthCreditNote{},
		DroppedEvents: []TruthEvent{}, UnackedEvents: []TruthEvent{},
		Stats: s.stats.clone(),
	}
	for _, id := range s.invOrder {
		inv := s.invoices[id]
		if inv.Status != "paid" {
			continue
		}
		t.PaidInvoices = append(t.PaidInvoices, TruthInvoice{
			Account: inv.Account, ID: inv.ID, Customer: inv.Customer, Subscription: inv.Subscription,
			Amount: inv.AmountPaid, Currency: inv.Currency, EventIDs: slices.Clone(inv.EventIDs),
		})
	}
	for _, id := range s.cnOrder {
		cn := s.cnotes[id]
		t.CreditNotes = append(t.CreditNotes, TruthCreditNote{
			Account: cn.Account, ID: cn.ID, Invoice: cn.Invoice, Total: cn.Total,
			InvoiceTotal: s.invoices[cn.Invoice].AmountPaid, Status: cn.Status,
			EventIDs: slices.Clone(cn.EventIDs), VoidEventIDs: slices.Clone(cn.VoidEventIDs),
		})
	}
	for _, id := range s.subOrder {
		sub := s.subs[id]
		cur := sub.Current()
		ts := TruthSubscription{
			Account: sub.Account, ID: sub.ID, Customer: sub.Customer, Status: cur.Status,
			CancelAtPeriodEnd: cur.CancelAtPeriodEnd, CurrentPeriodEnd: cur.CurrentPeriodEnd.Unix(),
			CanceledAt: unixOrZero(cur.CanceledAt), EndedAt: unixOrZero(cur.EndedAt),
			Access: cur.Access(now), LastEventID: cur.EventID,
		}
		if s.cfg.Versions {
			v := cur.Version
			ts.Version = &v
		}
		t.Subscriptions = append(t.Subscriptions, ts)
	}
	for _, id := range s.fbOrder {
		fb := s.feedback[id]
		tf := TruthFeedback{Project: fb.Project, ID: fb.ID, EventID: fb.EventID, Votes: slices.Clone(fb.Votes)}
		for _, c := range fb.Comments {
			c.EventIDs = slices.Clone(c.EventIDs)
			tf.Comments = append(tf.Comments, c)
		}
		t.Feedback = append(t.Feedback, tf)
	}
	for _, ev := range s.events {
		te := TruthEvent{Provider: ev.Provider, ID: ev.ID, Type: ev.Type, Account: ev.Account, ResourceID: ev.ResourceID}
		// An event reached the receiver if it, or its thin twin, did.
		var attempted, acked bool
		for _, id := range []string{ev.ID, s.thinID(ev.ID)} {
			if f := s.delivered[id]; id != "" && f != nil {
				attempted, acked = attempted || f.attempted, acked || f.acked
			}
		}
		switch {
		case !attempted:
			t.DroppedEvents = append(t.DroppedEvents, te)
		case !acked:
			t.UnackedEvents = append(t.UnackedEvents, te)
		}
	}
	msgs := slices.SortedFunc(maps.Values(s.messages), func(a, b *Event) int { return cmp.Compare(a.seq, b.seq) })
	for _, ev := range msgs {
		if f := s.delivered[ev.ID]; f != nil && f.attempted && !f.acked {
			t.UnackedEvents = append(t.UnackedEvents, TruthEvent{
				Provider: ev.Provider, ID: ev.ID, Type: ev.Type, Account: ev.Account, ResourceID: ev.ResourceID,
			})
		}
	}
	return t
}

// thinID is the id of the thin twin of snapshot event id, "" when it has
// none. Callers hold mu.
func (s *Simulator) thinID(id string) string {
	if t, ok := s.thinOf[id]; ok {
		return t.ID
	}
	return ""
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
