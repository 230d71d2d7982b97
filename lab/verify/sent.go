package verify

import (
	"cmp"
	"crypto/sha256"
	"maps"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

// Event is one event the simulator planned to deliver.
type Event struct {
	Provider     string `json:"provider"`
	ID           string `json:"id"`
	Type         string `json:"type"`
	Account      string `json:"account"`
	ResourceKind string `json:"resource_kind"`
	ResourceID   string `json:"resource_id"`
	// Version of a subscription snapshot (data.object.version), when present.
	Version *int64 `json:"version,omitempty"`
	// BodySHA256 of the exact bytes sent (nil when unknown).
	BodySHA256 []byte `json:"-"`
}

// Sent is what a simulator's sender did with its events: every distinct
// event planned (dropped ones included), those acknowledged with a 2xx, and
// the conflicting copies (same id, other body) that were acknowledged.
type Sent struct {
	Events    map[string]Event
	Order     []string
	Acked     map[string]bool
	Conflicts map[string]Event
	// derived: built from the truth alone (fewer events, no bodies).
	derived bool
}

// SentFrom gathers what the sender did from the reports of its Run,
// Deliver or Send calls.
func SentFrom(reports ...simulator.Report) *Sent {
	s := &Sent{Events: map[string]Event{}, Acked: map[string]bool{}, Conflicts: map[string]Event{}}
	for _, rep := range reports {
		for _, r := range rep.Results {
			ev := eventOf(r.Event)
			if r.Event.Conflicting {
				if r.Outcome == simulator.OutcomeAcked {
					s.Conflicts[ev.ID] = ev
				}
				continue
			}
			if _, ok := s.Events[ev.ID]; !ok {
				s.Events[ev.ID] = ev
				s.Order = append(s.Order, ev.ID)
			}
			if r.Outcome == simulator.OutcomeAcked {
				s.Acked[ev.ID] = true
			}
		}
	}
	return s
}

func eventOf(e simulator.Event) Event {
	sum := sha256.Sum256(e.Body)
	ev := Event{
		Provider: e.Provider, ID: e.ID, Type: e.Type, Account: e.Account,
		ResourceKind: e.ResourceKind, ResourceID: e.ResourceID, BodySHA256: sum[:],
	}
	if e.ResourceKind == simulator.KindSubscription {
		if v := gjson.GetBytes(e.Body, "data.object.version"); v.Exists() {
			n := v.Int()
			ev.Version = &n
		}
	}
	return ev
}

// sentFromTruth is what the truth alone tells: the events that made each
// invoice paid, each credit note, each feedback item and each
// subscription's latest state,
// acknowledged unless the truth lists them as dropped or unacknowledged.
func sentFromTruth(t simulator.Truth) *Sent {
	s := &Sent{Events: map[string]Event{}, Acked: map[string]bool{}, Conflicts: map[string]Event{}, derived: true}
	notAcked := map[string]bool{}
	for _, e := range t.DroppedEvents {
		notAcked[e.ID] = true
	}
	for _, e := range t.UnackedEvents {
		notAcked[e.ID] = true
	}
	add := func(ev Event) {
		if ev.ID == "" {
			return
		}
		if _, ok := s.Events[ev.ID]; ok {
			return
		}
		s.Events[ev.ID] = ev
		s.Order = append(s.Order, ev.ID)
		if !notAcked[ev.ID] {
			s.Acked[ev.ID] = true
		}
	}
	for _, inv := range t.PaidInvoices {
		for _, id := range inv.EventIDs {
			add(Event{Provider: simulator.ProviderStripe, ID: id, Type: simulator.EventInvoicePaid, Account: inv.Account,
				ResourceKind: simulator.KindInvoice, ResourceID: inv.ID})
		}
	}
	for _, sub := range t.Subscriptions {
		add(Event{Provider: simulator.ProviderStripe, ID: sub.LastEventID, Account: sub.Account,
			ResourceKind: simulator.KindSubscription, ResourceID: sub.ID, Version: sub.Version})
	}
	for _, cn := range t.CreditNotes {
		for _, id := range cn.EventIDs {
			add(Event{Provider: simulator.ProviderStripe, ID: id, Type: simulator.EventCreditNoteCreated, Account: cn.Account,
				ResourceKind: simulator.KindCreditNote, ResourceID: cn.ID})
		}
		for _, id := range cn.VoidEventIDs {
			add(Event{Provider: simulator.ProviderStripe, ID: id, Type: simulator.EventCreditNoteVoided, Account: cn.Account,
				ResourceKind: simulator.KindCreditNote, ResourceID: cn.ID})
		}
	}
	for _, fb := range t.Feedback {
		add(Event{Provider: simulator.ProviderStandard, ID: fb.EventID, Type: simulator.EventFeedbackCreated, Account: fb.Project,
			ResourceKind: simulator.KindFeedback, ResourceID: fb.ID})
		for _, ev := range followUps(fb) {
			add(ev)
		}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func sortedAlertKeys(m map[alertKey]int) []alertKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b alertKey) int {
		return cmp.Or(cmp.Compare(a.project, b.project), cmp.Compare(a.feedback, b.feedback))
	})
}
