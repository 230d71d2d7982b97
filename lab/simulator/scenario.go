package simulator

import (
	"cmp"
	"slices"
	"time"
)

// Plan is an ordered list of deliveries for Deliver.
type Plan struct {
	Deliveries []Delivery
	// Concurrency of the sender for this plan; 0 means Config.Delivery.Concurrency.
	Concurrency int
}

// Delivery is one planned send of an event with its faults.
type Delivery struct {
	Event Event
	// At is when the first attempt may start, in real time from the start of
	// Deliver (already scaled by TimeScale).
	At time.Duration
	// Duplicate: a second copy of an event that is also delivered normally.
	Duplicate bool
	// Delayed: held back by a random delay.
	Delayed bool
	// Reordered: moved inside its reorder window.
	Reordered bool
	// Dropped: never sent; GET /v1/events still lists the event.
	Dropped bool
	// Late: sent only after every other delivery of the plan has finished
	// (conflicting copies go late, and only when the original was acknowledged).
	Late bool
}

// Generate builds a scenario into the simulator's state (customers,
// subscriptions with their changes, paid invoices, feedback items) and returns
// the delivery plan of its events with the configured faults. The same Seed
// and Config give the same ids, order and faults.
func (s *Simulator) Generate() Plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plan(s.generateScenario())
}

type script struct {
	steps []func() []*Event
}

func (s *Simulator) generateScenario() []*Event {
	sc := s.cfg.Scenario
	rng := s.scenRand
	var scripts []*script
	for _, acct := range s.cfg.Accounts {
		for range sc.CustomersPerAccount {
			scripts = append(scripts, s.subscriptionScript(acct))
		}
	}
	for _, proj := range s.cfg.Projects {
		for range max(sc.FeedbackPerProject, 0) {
			scripts = append(scripts, s.feedbackScript(proj))
		}
	}
	// Interleave the resources' stories the way real traffic mixes them.
	var out []*Event
	for len(scripts) > 0 {
		i := rng.IntN(len(scripts))
		sc := scripts[i]
		out = append(out, sc.steps[0]()...)
		sc.steps = sc.steps[1:]
		if len(sc.steps) == 0 {
			scripts = slices.Delete(scripts, i, i+1)
		}
	}
	return out
}

// feedbackScript is a feedback item's story: its creation, then (with
// CommentsPerFeedback or VotesPerFeedback) its comments and votes in a
// random order, one step each.
func (s *Simulator) feedbackScript(proj string) *script {
	sc := s.cfg.Scenario
	rng := s.scenRand
	var item *FeedbackItem
	steps := []func() []*Event{func() []*Event {
		var ev *Event
		item, ev = s.createFeedback(proj, "")
		return []*Event{ev}
	}}
	if sc.CommentsPerFeedback <= 0 && sc.VotesPerFeedback <= 0 {
		return &script{steps: steps} // nothing more drawn from the stream
	}
	var follow []bool // true: a comment
	for range rng.IntN(max(sc.CommentsPerFeedback, 0) + 1) {
		follow = append(follow, true)
	}
	for range rng.IntN(max(sc.VotesPerFeedback, 0) + 1) {
		follow = append(follow, false)
	}
	rng.Shuffle(len(follow), func(i, j int) { follow[i], follow[j] = follow[j], follow[i] })
	for _, comment := range follow {
		if !comment {
			steps = append(steps, func() []*Event { return []*Event{s.vote(item)} })
			continue
		}
		steps = append(steps, func() []*Event {
			evs := []*Event{s.comment(item, "")}
			if sc.RecommentRate > 0 && rng.Float64() < sc.RecommentRate {
				evs = append(evs, s.commentEvent(item, &item.Comments[len(item.Comments)-1]))
			}
			return evs
		})
	}
	return &script{steps: steps}
}

func (s *Simulator) subscriptionScript(acct string) *script {
	sc := s.cfg.Scenario
	rng := s.scenRand
	var sub *Subscription
	opts := SubscriptionOptions{}
	if rng.Float64() < 0.3 {
		opts.Status = StatusTrialing
	}
	steps := []func() []*Event{func() []*Event {
		var ev *Event
		sub, ev = s.createSubscription(acct, "", opts)
		return []*Event{ev}
	}}
	actions := make([]bool, 0, sc.InvoicesPerSubscription+sc.UpdatesPerSubscription) // true: pay
	for range max(sc.InvoicesPerSubscription, 0) {
		actions = append(actions, true)
	}
	for range max(sc.UpdatesPerSubscription, 0) {
		actions = append(actions, false)
	}
	rng.Shuffle(len(actions), func(i, j int) { actions[i], actions[j] = actions[j], actions[i] })
	for _, pay := range actions {
		if pay {
			steps = append(steps, func() []*Event {
				inv, ev, _ := s.payInvoice(InvoiceOptions{Subscription: sub.ID})
				evs := []*Event{ev}
				if rng.Float64() < sc.SecondEventRate {
					evs = append(evs, s.invoicePaidEvent(inv))
				}
				// Guarded so that runs without credit notes draw nothing
				// more from the scenario stream.
				if sc.CreditNoteRate > 0 && rng.Float64() < sc.CreditNoteRate {
					total := inv.AmountPaid * int64(1+rng.IntN(4)) / 4
					cn, cev := s.createCreditNote(inv, total)
					evs = append(evs, cev)
					if sc.VoidRate > 0 && rng.Float64() < sc.VoidRate {
						cn.Status, cn.VoidedAt = CreditNoteVoid, s.now()
						evs = append(evs, s.creditNoteEvent(cn, EventCreditNoteVoided))
					}
				}
				return evs
			})
			continue
		}
		steps = append(steps, func() []*Event {
			return []*Event{s.snapshot(sub, s.nextState(sub), EventSubscriptionUpdated)}
		})
	}
	if rng.Float64() < sc.CancelRate {
		atPeriodEnd := rng.IntN(2) == 0
		steps = append(steps, func() []*Event { return []*Event{s.cancel(sub, atPeriodEnd)} })
	}
	return &script{steps: steps}
}

// nextState picks a plausible change of a live subscription.
func (s *Simulator) nextState(sub *Subscription) SubscriptionState {
	rng := s.scenRand
	st := sub.Current().SubscriptionState
	now := s.now()
	renew := func() {
		st.CurrentPeriodStart = st.CurrentPeriodEnd
		st.CurrentPeriodEnd = st.CurrentPeriodEnd.Add(period)
	}
	switch {
	case st.Status == StatusTrialing:
		st.Status = StatusActive
		st.TrialEnd = time.Time{}
		renew()
	case st.Status == StatusPastDue:
		st.Status = StatusActive
	case st.CancelAtPeriodEnd:
		st.CancelAtPeriodEnd = false
		st.CanceledAt = time.Time{}
	default:
		switch rng.IntN(3) {
		case 0:
			st.Status = StatusPastDue
		case 1:
			renew()
		default:
			st.CancelAtPeriodEnd = true
			st.CanceledAt = now
		}
	}
	return st
}

// plan turns events into deliveries with faults. Callers hold mu.
func (s *Simulator) plan(events []*Event) Plan {
	d := s.cfg.Delivery
	rng := s.planRand
	events = s.asSent(events)
	main := make([]Delivery, 0, len(events))
	for _, ev := range events {
		del := Delivery{Event: *ev}
		if ev.Provider == ProviderStripe && rng.Float64() < d.DropRate {
			del.Dropped = true
		}
		main = append(main, del)
	}
	if w := d.ReorderWindow; w > 1 {
		for start := 0; start < len(main); start += w {
			chunk := main[start:min(start+w, len(main))]
			before := make([]string, len(chunk))
			for i := range chunk {
				before[i] = chunk[i].Event.ID
			}
			rng.Shuffle(len(chunk), func(i, j int) { chunk[i], chunk[j] = chunk[j], chunk[i] })
			for i := range chunk {
				chunk[i].Reordered = chunk[i].Event.ID != before[i]
			}
		}
	}
	for i := range main {
		main[i].At = s.scaled(time.Duration(i) * d.Interval)
		if !main[i].Dropped && rng.Float64() < d.DelayRate {
			main[i].At += s.scaled(randDuration(rng.Float64(), d.MaxDelay))
			main[i].Delayed = true
		}
	}
	var extra, late []Delivery
	for _, del := range main {
		if del.Dropped {
			continue
		}
		if rng.Float64() < d.DuplicateRate {
			extra = append(extra, Delivery{
				Event: del.Event, Duplicate: true,
				At: del.At + s.scaled(randDuration(rng.Float64(), d.DuplicateSpread)),
			})
		}
		if rng.Float64() < d.ConflictRate {
			late = append(late, Delivery{Event: s.Conflicting(del.Event), Late: true})
		}
	}
	all := append(main, extra...)
	slices.SortStableFunc(all, func(a, b Delivery) int { return cmp.Compare(a.At, b.At) })
	return Plan{Deliveries: append(all, late...)}
}

// asSent is what the event destination sends of events, by
// Config.ThinEvents: the snapshot events, their thin twins instead, or
// each snapshot followed by its twin. Callers hold mu.
func (s *Simulator) asSent(events []*Event) []*Event {
	if s.cfg.ThinEvents == ThinOff {
		return events
	}
	out := make([]*Event, 0, 2*len(events))
	for _, ev := range events {
		t, ok := s.thinOf[ev.ID]
		switch {
		case !ok:
			out = append(out, ev) // not a Stripe event
		case s.cfg.ThinEvents == ThinOnly:
			out = append(out, t)
		default:
			out = append(out, ev, t)
		}
	}
	return out
}

func randDuration(u float64, maxDur time.Duration) time.Duration {
	return time.Duration(u * float64(maxDur))
}

func (s *Simulator) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.cfg.Delivery.TimeScale)
}
