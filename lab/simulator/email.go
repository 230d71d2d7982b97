package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Email is one email the email API accepted.
type Email struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	From           string `json:"from"`
	To             string `json:"to"`
	Subject        string `json:"subject"`
	Text           string `json:"text"`
	Created        int64  `json:"created"`
	// Posts counts the POSTs that carried this email's Idempotency-Key
	// (1 when it had none or idempotency is off).
	Posts int `json:"posts"`
	// AnswersLost counts the answers about it that were lost after acceptance.
	AnswersLost int `json:"answers_lost"`
}

// emailRequest is the JSON body of POST /v1/emails.
type emailRequest struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

type mailbox struct {
	byKey    map[string]*Email
	list     []*Email
	loseNext int
}

func (m *mailbox) init() { m.byKey = map[string]*Email{} }

// Emails returns every accepted email in acceptance order.
func (s *Simulator) Emails() []Email {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Email, len(s.mail.list))
	for i, e := range s.mail.list {
		out[i] = *e
	}
	return out
}

// LoseNextEmailAnswers makes the next n POSTs to the email API record their
// email and then lose the answer (Config.Email.LoseMode).
func (s *Simulator) LoseNextEmailAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mail.loseNext += n
}

func (s *Simulator) postEmail(w http.ResponseWriter, r *http.Request) {
	k := s.cfg.Email
	if k.APIKey != "" && apiKey(r) != k.APIKey {
		writeError(w, http.StatusUnauthorized, wireErrorBody{Type: "invalid_request_error", Message: "Invalid API Key provided"})
		return
	}
	var req emailRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || req.To == "" {
		writeError(w, http.StatusBadRequest, wireErrorBody{Type: "invalid_request_error", Param: "to",
			Message: "Body must be JSON with at least \"to\": " + fmt.Sprint(err)})
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if k.NoIdempotency {
		key = ""
	}

	s.mu.Lock()
	s.stats.Email.Posts++
	e, seen := s.mail.byKey[key]
	if seen && key != "" {
		if e.From != req.From || e.To != req.To || e.Subject != req.Subject || e.Text != req.Text {
			s.mu.Unlock()
			writeError(w, http.StatusConflict, wireErrorBody{Type: "idempotency_error",
				Message: "Keys for idempotent requests can only be used with the same parameters they were first used with."})
			return
		}
		e.Posts++
		s.stats.Email.Deduped++
	} else {
		e = &Email{
			ID: s.mailID(), Object: "email", IdempotencyKey: key,
			From: req.From, To: req.To, Subject: req.Subject, Text: req.Text,
			Created: s.cfg.Clock().Unix(), Posts: 1,
		}
		s.mail.list = append(s.mail.list, e)
		if key != "" {
			s.mail.byKey[key] = e
		}
		s.stats.Email.Accepted++
	}
	lose := false
	switch {
	case s.mail.loseNext > 0:
		s.mail.loseNext--
		lose = true
	case k.LoseAnswerRate > 0 && s.mailRand.Float64() < k.LoseAnswerRate:
		lose = true
	}
	if lose {
		e.AnswersLost++
		s.stats.Email.LostAnswers++
	}
	body := mustJSON(e)
	s.mu.Unlock()

	if !lose {
		writeRaw(w, http.StatusOK, body)
		return
	}
	switch k.LoseMode {
	case Lose5xx:
		writeError(w, http.StatusBadGateway, wireErrorBody{Type: "api_error", Message: "upstream connection reset"})
	case LoseTimeout:
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Minute):
		}
		closeConn(w)
	default:
		closeConn(w)
	}
}

// closeConn drops the connection without an answer.
func closeConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // the server aborts the response
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func (s *Simulator) mailID() string {
	b := make([]byte, 20)
	for i := range b {
		b[i] = idAlphabet[s.mailRand.IntN(len(idAlphabet))]
	}
	return "em_" + string(b)
}

func (s *Simulator) listEmails(w http.ResponseWriter, _ *http.Request) {
	emails := s.Emails()
	writeJSON(w, http.StatusOK, wireList[Email]{Object: "list", Data: emails, URL: "/v1/emails"})
}
