package simulator

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/providers/github"
)

// This file is the simulated GitHub: webhooks that deliver once and never
// retry, and the hook deliveries REST API (list with cursor pagination, get
// one, redeliver) through which a receiver recovers what it missed. Every
// attempt is in the hook's delivery log; a failed one (GitHubDeliver with
// fail set) is logged with a connection error and never reaches the target.

// GitHubRepoHook is the delivery log path of a repository's hook.
func GitHubRepoHook(owner, repo string, id int64) string {
	return fmt.Sprintf("repos/%s/%s/hooks/%d", owner, repo, id)
}

// GitHubOrgHook is the delivery log path of an organization's hook.
func GitHubOrgHook(org string, id int64) string { return fmt.Sprintf("orgs/%s/hooks/%d", org, id) }

// GitHubAppHook is the delivery log path of the GitHub App's hook.
const GitHubAppHook = "app/hook"

// GitHubDelivery is one attempt in a hook's delivery log.
type GitHubDelivery struct {
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
	Duration    float64   `json:"duration"`
	Status      string    `json:"status"`
	StatusCode  int       `json:"status_code"`
	Event       string    `json:"event"`
	Action      string    `json:"action,omitempty"`
	// Sent: the request reached the target (whatever it answered).
	Sent bool `json:"-"`

	header  map[string]string
	payload json.RawMessage
	answer  []byte
}

type gitHubHook struct {
	id     int64
	target Endpoint
	log    []*GitHubDelivery // oldest first
}

type gitHubState struct {
	rand  *rand.Rand
	next  int64
	hooks map[string]*gitHubHook
	// failRedeliveries: the next n redeliveries fail like a dropped one.
	failRedeliveries int
	// loseAnswers: the next n deliveries reach the target, but the log
	// records a timeout (the receiver answered too late for GitHub).
	loseAnswers  int
	redeliveries int

	// objects are the issues, pull requests, check suites and runs by
	// their REST path (github_objects.go).
	objects            map[string]json.RawMessage
	objectReads        int
	installationTokens map[string]string // token → installation id
	tokensMinted       int
	rateLimited        int // the next n object reads are rate-limited
	rateReset          time.Time
}

func newGitHubState(seed uint64) gitHubState {
	return gitHubState{rand: rand.New(rand.NewPCG(seed, 6)), next: 1_000_000, hooks: map[string]*gitHubHook{}}
}

// AddGitHubHook registers a hook whose deliveries go to target (signed with
// its secrets, X-Hub-Signature-256). path is GitHubRepoHook, GitHubOrgHook
// or GitHubAppHook.
func (s *Simulator) AddGitHubHook(path string, target Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := int64(0)
	if i := strings.LastIndex(path, "/hooks/"); i >= 0 {
		id, _ = strconv.ParseInt(path[i+len("/hooks/"):], 10, 64)
	}
	s.gh.hooks[path] = &gitHubHook{id: id, target: target}
}

// FailNextGitHubRedeliveries makes the next n redeliveries fail as if the
// receiver were still unreachable (logged, never sent).
func (s *Simulator) FailNextGitHubRedeliveries(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gh.failRedeliveries = n
}

// LoseNextGitHubAnswers makes the next n sent deliveries time out in the
// log although the target received them (and may have stored them): GitHub
// gives up waiting after 10 s and marks the delivery failed.
func (s *Simulator) LoseNextGitHubAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gh.loseAnswers = n
}

// GitHubRedeliveries counts the redeliveries asked through the API.
func (s *Simulator) GitHubRedeliveries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gh.redeliveries
}

// GitHubDeliveries returns a copy of a hook's delivery log, oldest first.
func (s *Simulator) GitHubDeliveries(path string) []GitHubDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.gh.hooks[path]
	if h == nil {
		return nil
	}
	out := make([]GitHubDelivery, len(h.log))
	for i, d := range h.log {
		out[i] = *d
	}
	return out
}

// GitHubDeliver makes a new delivery of event (X-GitHub-Event) with the
// JSON body on the hook at path and sends it once, as GitHub does (no
// retry). With fail set it is logged as failed (no connection) and never
// sent: only the delivery log knows it.
func (s *Simulator) GitHubDeliver(ctx context.Context, path, event string, body []byte, fail bool) (GitHubDelivery, error) {
	if !json.Valid(body) {
		return GitHubDelivery{}, errors.New("github delivery: the body is not JSON")
	}
	s.mu.Lock()
	h := s.gh.hooks[path]
	if h == nil {
		s.mu.Unlock()
		return GitHubDelivery{}, fmt.Errorf("github hook %s is not registered (AddGitHubHook)", path)
	}
	guid := s.newGUID()
	var action string
	var doc struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(body, &doc) == nil {
		action = doc.Action
	}
	header := map[string]string{
		"Accept":            "*/*",
		"Content-Type":      "application/json",
		"User-Agent":        "GitHub-Hookshot/sim",
		"X-GitHub-Delivery": guid,
		"X-GitHub-Event":    event,
		"X-GitHub-Hook-ID":  strconv.FormatInt(h.id, 10),
	}
	d := &GitHubDelivery{GUID: guid, Event: event, Action: action, header: header, payload: slices.Clone(body)}
	s.mu.Unlock()
	return s.gitHubSend(ctx, path, d, fail)
}

// gitHubSend sends d (a new attempt) to the hook's target and logs it.
func (s *Simulator) gitHubSend(ctx context.Context, path string, d *GitHubDelivery, fail bool) (GitHubDelivery, error) {
	s.mu.Lock()
	h := s.gh.hooks[path]
	target := h.target
	s.mu.Unlock()
	start := time.Now()
	var err error
	if fail {
		d.Status, d.StatusCode = "failed to connect to host", 0
	} else {
		d.StatusCode, d.answer, err = s.gitHubPost(ctx, target, d)
		d.Sent = err == nil
		s.mu.Lock()
		lost := d.Sent && s.gh.loseAnswers > 0
		if lost {
			s.gh.loseAnswers--
		}
		s.mu.Unlock()
		switch {
		case lost:
			d.Status, d.StatusCode, d.answer = "timed out", 0, nil
		case err != nil:
			d.Status = "failed to connect to host"
		case d.StatusCode/100 == 2:
			d.Status = "OK"
		default:
			d.Status = "Invalid HTTP Response: " + strconv.Itoa(d.StatusCode)
		}
	}
	d.DeliveredAt = start.UTC().Truncate(time.Second)
	d.Duration = time.Since(start).Seconds()
	s.mu.Lock()
	s.gh.next++
	d.ID = s.gh.next
	h.log = append(h.log, d)
	out := *d
	s.mu.Unlock()
	return out, err
}

// gitHubPost posts d's payload with its headers and a fresh signature.
func (s *Simulator) gitHubPost(ctx context.Context, target Endpoint, d *GitHubDelivery) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, bytes.NewReader(d.payload))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range d.header {
		req.Header.Set(k, v)
	}
	if len(target.Secrets) > 0 {
		req.Header.Set("X-Hub-Signature-256", SignGitHub(d.payload, target.Secrets[0]))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, answer, nil
}

// SignGitHub is the X-Hub-Signature-256 of body: sha256= and the hex
// HMAC-SHA256 under secret, as the GitHub provider signs it
// (github.Signature256).
func SignGitHub(body []byte, secret string) string { return github.Signature256(body, secret) }

// newGUID draws a delivery GUID (a UUID's shape). Callers hold mu.
func (s *Simulator) newGUID() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(s.gh.rand.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// gitHubRoutes adds the hook deliveries API to mux.
func (s *Simulator) gitHubRoutes(mux *http.ServeMux) {
	for _, prefix := range []string{"/repos/{owner}/{repo}/hooks/{hook}", "/orgs/{org}/hooks/{hook}", "/app/hook"} {
		mux.HandleFunc("GET "+prefix+"/deliveries", s.gitHubAPI(s.listGitHubDeliveries))
		mux.HandleFunc("GET "+prefix+"/deliveries/{id}", s.gitHubAPI(s.getGitHubDelivery))
		mux.HandleFunc("POST "+prefix+"/deliveries/{id}/attempts", s.gitHubAPI(s.redeliverGitHub))
	}
	s.gitHubObjectRoutes(mux)
}

type gitHubHandler func(w http.ResponseWriter, r *http.Request, path string)

// gitHubAPI wraps a handler with GitHub's authentication (a token for
// repository and organization hooks; for the App's hook a JWT whose issuer
// is Config.GitHubAppID), the hook lookup, and faults.
func (s *Simulator) gitHubAPI(h gitHubHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-GitHub-Request-Id", "SIM:"+strconv.FormatInt(time.Now().UnixNano()%1e9, 16))
		w.Header().Set("X-RateLimit-Limit", "5000")
		s.mu.Lock()
		s.stats.API.Requests++
		s.mu.Unlock()
		var path string
		switch {
		case r.PathValue("repo") != "":
			path = "repos/" + r.PathValue("owner") + "/" + r.PathValue("repo") + "/hooks/" + r.PathValue("hook")
		case r.PathValue("org") != "":
			path = "orgs/" + r.PathValue("org") + "/hooks/" + r.PathValue("hook")
		default:
			path = GitHubAppHook
		}
		if !s.gitHubAuthorized(r, path == GitHubAppHook) {
			s.countAPI(http.StatusUnauthorized)
			writeGitHubError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		s.mu.Lock()
		_, ok := s.gh.hooks[path]
		s.mu.Unlock()
		if !ok {
			s.countAPI(http.StatusNotFound)
			writeGitHubError(w, http.StatusNotFound, "Not Found")
			return
		}
		f, gone := s.awaitFault(r)
		if gone {
			return
		}
		if f.Status != 0 {
			s.countAPI(f.Status)
			writeGitHubFault(w, f)
			return
		}
		h(w, r, path)
	}
}

func (s *Simulator) gitHubAuthorized(r *http.Request, app bool) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(r.Header.Get("Authorization"), "token ")
	}
	if !ok {
		return false
	}
	if !app {
		return tok == s.cfg.APIKey
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return false
	}
	return claims.Iss == strconv.FormatInt(s.cfg.GitHubAppID, 10) && time.Unix(claims.Exp, 0).After(time.Now())
}

func (s *Simulator) listGitHubDeliveries(w http.ResponseWriter, r *http.Request, path string) {
	q := r.URL.Query()
	perPage := 30
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeGitHubError(w, http.StatusUnprocessableEntity, "per_page must be between 1 and 100")
			return
		}
		perPage = n
	}
	// The cursor is opaque to clients; here it is the id of the last
	// attempt of the previous page.
	after := int64(0)
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		if err != nil || !strings.HasPrefix(c, "v1_") {
			writeGitHubError(w, http.StatusBadRequest, "Invalid cursor")
			return
		}
		after = n
	}
	s.mu.Lock()
	log := s.gh.hooks[path].log
	items := make([]GitHubDelivery, 0, perPage)
	more := false
	for i := len(log) - 1; i >= 0; i-- {
		d := log[i]
		if after != 0 && d.ID >= after {
			continue
		}
		if len(items) == perPage {
			more = true
			break
		}
		items = append(items, *d)
	}
	s.mu.Unlock()
	if more {
		next := *r.URL
		nq := next.Query()
		nq.Set("per_page", strconv.Itoa(perPage))
		nq.Set("cursor", "v1_"+strconv.FormatInt(items[len(items)-1].ID, 10))
		next.RawQuery = nq.Encode()
		next.Scheme, next.Host = "http", r.Host
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next.String()))
	}
	writeJSON(w, http.StatusOK, items)
}

// gitHubDeliveryDetail is a delivery with its request and response.
type gitHubDeliveryDetail struct {
	GitHubDelivery
	Request  gitHubExchange `json:"request"`
	Response gitHubExchange `json:"response"`
}

type gitHubExchange struct {
	Headers map[string]string `json:"headers"`
	Payload json.RawMessage   `json:"payload"`
}

func (s *Simulator) findGitHubDelivery(w http.ResponseWriter, r *http.Request, path string) *GitHubDelivery {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var found *GitHubDelivery
	if err == nil {
		s.mu.Lock()
		for _, d := range s.gh.hooks[path].log {
			if d.ID == id {
				found = d
			}
		}
		s.mu.Unlock()
	}
	if found != nil {
		return found
	}
	s.countAPI(http.StatusNotFound)
	writeGitHubError(w, http.StatusNotFound, "Not Found")
	return nil
}

func (s *Simulator) getGitHubDelivery(w http.ResponseWriter, r *http.Request, path string) {
	d := s.findGitHubDelivery(w, r, path)
	if d == nil {
		return
	}
	s.mu.Lock()
	out := gitHubDeliveryDetail{GitHubDelivery: *d,
		Request: gitHubExchange{Headers: d.header, Payload: d.payload}, Response: gitHubExchange{Headers: map[string]string{}}}
	if len(d.answer) > 0 {
		out.Response.Payload = mustJSON(string(d.answer))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// redeliverGitHub sends the attempt's delivery again (same GUID, headers
// and payload, signed afresh with the hook's secret) as a new attempt
// marked redelivery, then answers 202 Accepted as GitHub does.
func (s *Simulator) redeliverGitHub(w http.ResponseWriter, r *http.Request, path string) {
	orig := s.findGitHubDelivery(w, r, path)
	if orig == nil {
		return
	}
	// Sent before answering, so a test sees it at once; GitHub sends it soon after.
	_, _ = s.redeliver(r.Context(), path, orig)
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// GitHubRedeliver redelivers the delivery guid of the hook at path, as an
// operator's "Redeliver" in GitHub's settings does: a new attempt with the
// same GUID and payload, signed afresh, sent once.
func (s *Simulator) GitHubRedeliver(ctx context.Context, path, guid string) (GitHubDelivery, error) {
	s.mu.Lock()
	var orig *GitHubDelivery
	if h := s.gh.hooks[path]; h != nil {
		for _, d := range h.log {
			if d.GUID == guid {
				orig = d
				break
			}
		}
	}
	s.mu.Unlock()
	if orig == nil {
		return GitHubDelivery{}, fmt.Errorf("github hook %s has no delivery %s", path, guid)
	}
	return s.redeliver(ctx, path, orig)
}

func (s *Simulator) redeliver(ctx context.Context, path string, orig *GitHubDelivery) (GitHubDelivery, error) {
	s.mu.Lock()
	s.gh.redeliveries++
	fail := s.gh.failRedeliveries > 0
	if fail {
		s.gh.failRedeliveries--
	}
	d := &GitHubDelivery{GUID: orig.GUID, Event: orig.Event, Action: orig.Action, Redelivery: true,
		header: orig.header, payload: orig.payload}
	s.mu.Unlock()
	return s.gitHubSend(ctx, path, d, fail)
}

func writeGitHubError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest",
		"status": strconv.Itoa(status)})
}

func writeGitHubFault(w http.ResponseWriter, f Fault) {
	switch f.Status {
	case http.StatusTooManyRequests:
		// GitHub's secondary rate limit, with Retry-After.
		secs := max(int64(f.RetryAfter.Round(time.Second)/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeJSON(w, f.Status, map[string]string{"message": "You have exceeded a secondary rate limit.",
			"documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
	case http.StatusForbidden:
		writeGitHubError(w, f.Status, "Resource not accessible by integration")
	default:
		writeGitHubError(w, f.Status, http.StatusText(f.Status))
	}
}
