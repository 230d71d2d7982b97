package simulator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fault is one injected misbehaviour of the Stripe API.
type Fault struct {
	// Path is a prefix of the request path it applies to ("" = any /v1/ path
	// of the Stripe API, not the email API), e.g. "/v1/invoices/in_123".
	Path string
	// Status to answer with: 500/502/503 (api_error), 429 (rate_limit, with
	// Retry-After), 404 (resource_missing), 403, 400… 0 answers normally
	// after Delay.
	Status int
	// RetryAfter is sent with a 429. Default Config.API.RetryAfter.
	RetryAfter time.Duration
	// Delay before answering (latency, or a timeout for a short client deadline).
	Delay time.Duration
	// Times is how many matching requests it hits. Default 1.
	Times int
}

// InjectAPIFault queues a fault for the next matching Stripe API requests.
// Faults are matched in the order they were injected.
func (s *Simulator) InjectAPIFault(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	if f.RetryAfter == 0 {
		f.RetryAfter = s.cfg.API.RetryAfter
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// Handler serves the Stripe API subset (GET /v1/account, /v1/invoices/{id},
// /v1/credit_notes/{id},
// /v1/subscriptions/{id}, /v1/subscriptions, /v1/events, /v1/events/{id},
// and the thin events' /v2/core/events/{id}),
// GitHub's hook deliveries API (github.go), the email API (POST and GET
// /v1/emails) and the ground truth
// (GET /_sim/truth).
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/account", s.stripeAPI(s.getAccount))
	mux.HandleFunc("GET /v1/invoices/{id}", s.stripeAPI(s.getInvoice))
	mux.HandleFunc("GET /v1/subscriptions/{id}", s.stripeAPI(s.getSubscription))
	mux.HandleFunc("GET /v1/credit_notes/{id}", s.stripeAPI(s.getCreditNote))
	mux.HandleFunc("GET /v1/subscriptions", s.stripeAPI(s.listSubscriptions))
	mux.HandleFunc("GET /v1/events/{id}", s.stripeAPI(s.getEvent))
	mux.HandleFunc("GET /v1/events", s.stripeAPI(s.listEvents))
	mux.HandleFunc("GET /v2/core/events/{id}", s.stripeAPI(s.getThinEvent))
	s.gitHubRoutes(mux)
	mux.HandleFunc("POST /v1/emails", s.postEmail)
	mux.HandleFunc("GET /v1/emails", s.listEmails)
	mux.HandleFunc("GET /_sim/truth", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Truth())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, wireErrorBody{
			Type: "invalid_request_error", Message: fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path),
		})
	})
	return mux
}

type apiHandler func(w http.ResponseWriter, r *http.Request, account string)

// stripeAPI wraps an API handler with authentication, the account scope,
// faults and latency, in that order.
func (s *Simulator) stripeAPI(h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", "req_sim"+strconv.FormatInt(time.Now().UnixNano()%1e9, 10))
		w.Header().Set("Stripe-Version", r.Header.Get("Stripe-Version"))
		s.mu.Lock()
		s.stats.API.Requests++
		s.mu.Unlock()
		if !s.authorized(r) {
			s.countAPI(http.StatusUnauthorized)
			writeError(w, http.StatusUnauthorized, wireErrorBody{
				Type: "invalid_request_error", Message: "Invalid API Key provided: " + redact(apiKey(r)),
			})
			return
		}
		account, ok, werr := s.scope(r)
		if werr != nil {
			writeError(w, http.StatusBadRequest, *werr)
			return
		}
		if !ok {
			s.countAPI(http.StatusForbidden)
			writeError(w, http.StatusForbidden, forbidden(scopeHeader(r)))
			return
		}
		f, gone := s.awaitFault(r)
		if gone {
			return
		}
		if f.Status != 0 {
			s.countAPI(f.Status)
			writeFault(w, f, r)
			return
		}
		h(w, r, account)
	}
}

// awaitFault picks r's fault (pickFault) and waits out its delay; gone
// reports that the caller left meanwhile.
func (s *Simulator) awaitFault(r *http.Request) (f Fault, gone bool) {
	f = s.pickFault(r.URL.Path)
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return f, true
		}
	}
	return f, false
}

// pickFault takes an injected fault, else draws the random ones.
func (s *Simulator) pickFault(path string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Path == "" || strings.HasPrefix(path, f.Path) {
			f.Times--
			if f.Times <= 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
			return *f
		}
	}
	k := s.cfg.API
	out := Fault{Delay: k.Latency, RetryAfter: k.RetryAfter}
	if k.LatencyJitter > 0 {
		out.Delay += time.Duration(s.apiRand.Float64() * float64(k.LatencyJitter))
	}
	u := s.apiRand.Float64()
	for _, c := range []struct {
		rate   float64
		status int
	}{{k.ErrorRate, 500}, {k.RateLimitRate, 429}, {k.NotFoundRate, 404}, {k.ForbiddenRate, 403}} {
		if u < c.rate {
			out.Status = c.status
			break
		}
		u -= c.rate
	}
	return out
}

func (s *Simulator) countAPI(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.stats.API
	switch {
	case status == http.StatusUnauthorized:
		a.Unauthorized++
	case status == http.StatusForbidden:
		a.Forbidden++
	case status == http.StatusNotFound:
		a.NotFound++
	case status == http.StatusTooManyRequests:
		a.RateLimited++
	case status >= 500:
		a.Errors5xx++
	}
}

func writeFault(w http.ResponseWriter, f Fault, r *http.Request) {
	switch {
	case f.Status == http.StatusTooManyRequests:
		secs := max(int64(f.RetryAfter.Round(time.Second)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeError(w, f.Status, wireErrorBody{
			Type: "invalid_request_error", Code: "rate_limit",
			Message: "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.",
		})
	case f.Status == http.StatusNotFound:
		writeError(w, f.Status, missing(r))
	case f.Status == http.StatusForbidden:
		writeError(w, f.Status, forbidden(scopeHeader(r)))
	case f.Status >= 500:
		// Stripe marks retryable failures; stripe-go retries on it unless
		// its network retries are off.
		w.Header().Set("Stripe-Should-Retry", "true")
		writeError(w, f.Status, wireErrorBody{
			Type:    "api_error",
			Message: "An unknown error occurred. Please try again later.",
		})
	default:
		writeError(w, f.Status, wireErrorBody{Type: "invalid_request_error", Message: http.StatusText(f.Status)})
	}
}

func missing(r *http.Request) wireErrorBody {
	id := r.PathValue("id")
	// /v1/invoices/in_1 → invoice
	kind, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	kind = strings.TrimSuffix(kind, "s")
	return wireErrorBody{
		Type: "invalid_request_error", Code: "resource_missing", Param: "id",
		DocURL:  "https://stripe.com/docs/error-codes/resource-missing",
		Message: fmt.Sprintf("No such %s: '%s'", kind, id),
	}
}

func forbidden(account string) wireErrorBody {
	return wireErrorBody{
		Type: "invalid_request_error", Code: "account_invalid",
		Message: fmt.Sprintf("The provided key does not have access to account '%s' (or that account does not exist). Application access may have been revoked.", account),
	}
}

func apiKey(r *http.Request) string {
	if user, _, ok := r.BasicAuth(); ok {
		return user
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func (s *Simulator) authorized(r *http.Request) bool {
	return apiKey(r) == s.cfg.APIKey
}

func redact(key string) string {
	if len(key) <= 4 {
		return "****"
	}
	return strings.Repeat("*", len(key)-4) + key[len(key)-4:]
}

// scope resolves the account a request acts for: Stripe-Account or
// Stripe-Context when given (it must be a known account; the simulator has
// no organizations, so a context path of several accounts is unknown), else
// the first account, or with Connect the platform's own (which owns
// nothing). Both headers at once, naming different accounts, are refused.
func (s *Simulator) scope(r *http.Request) (string, bool, *wireErrorBody) {
	acct := strings.TrimSpace(r.Header.Get("Stripe-Account"))
	sctx := strings.TrimSpace(r.Header.Get("Stripe-Context"))
	if acct != "" && sctx != "" && acct != sctx {
		return "", false, &wireErrorBody{Type: "invalid_request_error",
			Message: "Stripe-Account and Stripe-Context name different accounts."}
	}
	h := cmp.Or(sctx, acct)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case sctx != "":
		s.stats.API.ScopedByContext++
	case acct != "":
		s.stats.API.ScopedByAccount++
	}
	switch {
	case h == "" && s.cfg.Connect:
		return s.cfg.PlatformAccount, true, nil
	case h == "":
		return s.accounts[0], true, nil
	case h == s.cfg.PlatformAccount || slices.Contains(s.accounts, h):
		return h, true, nil
	}
	return "", false, nil
}

// scopeHeader is the account a request named (for the 403's message).
func scopeHeader(r *http.Request) string {
	return cmp.Or(r.Header.Get("Stripe-Context"), r.Header.Get("Stripe-Account"))
}

// getAccount answers "retrieve your account": the account the key (and
// Stripe-Account header) acts for.
func (s *Simulator) getAccount(w http.ResponseWriter, _ *http.Request, account string) {
	writeJSON(w, http.StatusOK, map[string]any{"id": account, "object": "account"})
}

// writeFound answers a get-by-id: body, or Stripe's 404 when the object is
// not there (or belongs to another account).
func (s *Simulator) writeFound(w http.ResponseWriter, r *http.Request, body []byte) {
	if body == nil {
		s.countAPI(http.StatusNotFound)
		writeError(w, http.StatusNotFound, missing(r))
		return
	}
	writeRaw(w, http.StatusOK, body)
}

func (s *Simulator) getInvoice(w http.ResponseWriter, r *http.Request, account string) {
	s.mu.Lock()
	inv, ok := s.invoices[r.PathValue("id")]
	var body []byte
	if ok && inv.Account == account {
		body = mustJSON(s.invoiceWire(inv))
	}
	s.mu.Unlock()
	s.writeFound(w, r, body)
}

func (s *Simulator) getCreditNote(w http.ResponseWriter, r *http.Request, account string) {
	s.mu.Lock()
	cn, ok := s.cnotes[r.PathValue("id")]
	var body []byte
	if ok && cn.Account == account {
		body = mustJSON(s.creditNoteWire(cn))
	}
	s.mu.Unlock()
	s.writeFound(w, r, body)
}

func (s *Simulator) getSubscription(w http.ResponseWriter, r *http.Request, account string) {
	s.mu.Lock()
	sub, ok := s.subs[r.PathValue("id")]
	var body []byte
	if ok && sub.Account == account {
		body = mustJSON(s.subscriptionWire(sub, sub.Current()))
	}
	s.mu.Unlock()
	s.writeFound(w, r, body)
}

func (s *Simulator) getEvent(w http.ResponseWriter, r *http.Request, account string) {
	s.mu.Lock()
	var body []byte
	if i, ok := s.eventIdx[r.PathValue("id")]; ok && s.events[i].Account == account {
		body = s.events[i].Body
	}
	s.mu.Unlock()
	s.writeFound(w, r, body)
}

// getThinEvent answers GET /v2/core/events/{id}: a thin event of the
// account the request acts for.
func (s *Simulator) getThinEvent(w http.ResponseWriter, r *http.Request, account string) {
	s.mu.Lock()
	var body []byte
	if t, ok := s.thin[r.PathValue("id")]; ok && t.Account == account {
		body = t.Body
	}
	s.mu.Unlock()
	if body == nil {
		s.countAPI(http.StatusNotFound)
		writeError(w, http.StatusNotFound, wireErrorBody{Type: "invalid_request_error", Code: "resource_missing",
			Message: fmt.Sprintf("No such event: '%s'", r.PathValue("id"))})
		return
	}
	writeRaw(w, http.StatusOK, body)
}

type listQuery struct {
	limit         int
	startingAfter string
	endingBefore  string
}

func parseList(r *http.Request) (listQuery, *wireErrorBody) {
	q := r.URL.Query()
	lq := listQuery{limit: 10, startingAfter: q.Get("starting_after"), endingBefore: q.Get("ending_before")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return lq, &wireErrorBody{Type: "invalid_request_error", Param: "limit",
				Message: "Invalid limit: must be an integer between 1 and 100"}
		}
		lq.limit = n
	}
	return lq, nil
}

// page cuts a newest-first list at the cursor. ids[i] names items[i].
func page[T any](items []T, ids []string, lq listQuery) ([]T, bool, *wireErrorBody) {
	start, end := 0, len(items)
	if lq.startingAfter != "" {
		i := slices.Index(ids, lq.startingAfter)
		if i < 0 {
			return nil, false, &wireErrorBody{Type: "invalid_request_error", Param: "starting_after",
				Code: "resource_missing", Message: fmt.Sprintf("No such object: '%s'", lq.startingAfter)}
		}
		start = i + 1
	}
	if lq.endingBefore != "" {
		i := slices.Index(ids, lq.endingBefore)
		if i < 0 {
			return nil, false, &wireErrorBody{Type: "invalid_request_error", Param: "ending_before",
				Code: "resource_missing", Message: fmt.Sprintf("No such object: '%s'", lq.endingBefore)}
		}
		end = i
		start = max(start, end-lq.limit)
	}
	items = items[start:end]
	if len(items) > lq.limit {
		return items[:lq.limit], true, nil
	}
	return items, lq.endingBefore != "" && start > 0, nil
}

func (s *Simulator) listSubscriptions(w http.ResponseWriter, r *http.Request, account string) {
	lq, werr := parseList(r)
	if werr != nil {
		writeError(w, http.StatusBadRequest, *werr)
		return
	}
	q := r.URL.Query()
	status, customer := q.Get("status"), q.Get("customer")
	s.mu.Lock()
	var subs []*Subscription
	for _, id := range slices.Backward(s.subOrder) {
		sub := s.subs[id]
		cur := sub.Current()
		switch {
		case sub.Account != account:
		case customer != "" && sub.Customer != customer:
		case status == "" && cur.Status == StatusCanceled:
		case status != "" && status != "all" && cur.Status != status:
		default:
			subs = append(subs, sub)
		}
	}
	ids := make([]string, len(subs))
	for i, sub := range subs {
		ids[i] = sub.ID
	}
	got, more, werr := page(subs, ids, lq)
	out := wireList[json.RawMessage]{Object: "list", Data: []json.RawMessage{}, HasMore: more, URL: "/v1/subscriptions"}
	for _, sub := range got {
		out.Data = append(out.Data, mustJSON(s.subscriptionWire(sub, sub.Current())))
	}
	s.mu.Unlock()
	if werr != nil {
		writeError(w, http.StatusBadRequest, *werr)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Simulator) listEvents(w http.ResponseWriter, r *http.Request, account string) {
	lq, werr := parseList(r)
	if werr != nil {
		writeError(w, http.StatusBadRequest, *werr)
		return
	}
	q := r.URL.Query()
	created, werr := parseRange(q, "created")
	if werr != nil {
		writeError(w, http.StatusBadRequest, *werr)
		return
	}
	var types []string
	if t := q.Get("type"); t != "" {
		types = append(types, t)
	}
	for k, v := range q {
		if strings.HasPrefix(k, "types[") || k == "types" {
			types = append(types, v...)
		}
	}
	s.mu.Lock()
	var evs []*Event
	for _, ev := range s.events {
		if ev.Account == account && created.match(ev.Created.Unix()) && typeMatch(types, ev.Type) {
			evs = append(evs, ev)
		}
	}
	s.mu.Unlock()
	// Newest first, as Stripe lists them.
	slices.SortStableFunc(evs, func(a, b *Event) int {
		return cmp.Or(cmp.Compare(b.Created.Unix(), a.Created.Unix()), cmp.Compare(b.seq, a.seq))
	})
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	got, more, werr := page(evs, ids, lq)
	if werr != nil {
		writeError(w, http.StatusBadRequest, *werr)
		return
	}
	out := wireList[json.RawMessage]{Object: "list", Data: []json.RawMessage{}, HasMore: more, URL: "/v1/events"}
	for _, ev := range got {
		out.Data = append(out.Data, ev.Body)
	}
	writeJSON(w, http.StatusOK, out)
}

func typeMatch(types []string, typ string) bool {
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if t == typ || (strings.HasSuffix(t, "*") && strings.HasPrefix(typ, strings.TrimSuffix(t, "*"))) {
			return true
		}
	}
	return false
}

type timeRange struct {
	gt, gte, lt, lte *int64
}

func (tr timeRange) match(v int64) bool {
	return (tr.gt == nil || v > *tr.gt) && (tr.gte == nil || v >= *tr.gte) &&
		(tr.lt == nil || v < *tr.lt) && (tr.lte == nil || v <= *tr.lte)
}

func parseRange(q map[string][]string, name string) (timeRange, *wireErrorBody) {
	var tr timeRange
	for key, dst := range map[string]**int64{
		name: &tr.gte, name + "[gt]": &tr.gt, name + "[gte]": &tr.gte, name + "[lt]": &tr.lt, name + "[lte]": &tr.lte,
	} {
		v := ""
		if vs := q[key]; len(vs) > 0 {
			v = vs[0]
		}
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return tr, &wireErrorBody{Type: "invalid_request_error", Param: key, Message: "Invalid integer: " + v}
		}
		*dst = &n
		if key == name {
			tr.lte = &n
		}
	}
	return tr, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	writeRaw(w, status, mustJSON(v))
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, e wireErrorBody) {
	writeJSON(w, status, wireError{Error: e})
}
