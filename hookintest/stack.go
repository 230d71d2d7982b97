package hookintest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/metrics"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/starter"
)

// Stack is the App running for real: the intake on a loopback port (its
// public POST /webhooks/:endpoint), and the worker on the Temporal dev
// server, one workflow per resource, as `hookinbox webhook` and `hookinbox
// worker` run it.
type Stack struct {
	// URL is the intake's public base URL (http://127.0.0.1:PORT).
	URL string
	// MailURL is the base URL of the Mailpit the worker sends email to (its
	// HTTP API: GET /api/v1/messages): the one Run started, or
	// HOOKINBOX_TEST_MAILPIT_URL beside HOOKINBOX_TEST_SMTP_ADDR ("" when
	// that server's mail cannot be read back).
	MailURL string
	h       *Harness
	ops     *ops.Service
}

// Run starts the stack on the harness's database; it stops at the test's
// cleanup. Set HOOKINBOX_TEST_LOG to see its logs.
func (h *Harness) Run() *Stack {
	h.t.Helper()
	cfg := h.config(testenv.TemporalAddress(h.t))
	smtpAddr, mailURL := testenv.MailServer(h.t)
	cfg.Mailer, cfg.SMTPAddr = "smtp", smtpAddr
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("HOOKINBOX_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx := context.Background()
	wc, err := starter.Dial(ctx, cfg, log)
	if err != nil {
		h.t.Fatalf("hookintest: temporal: %v", err)
	}
	m := metrics.New()
	acts, err := app.NewActivities(cfg, h.worker, wc, m, log, h.biz)
	if err != nil {
		wc.Close()
		h.t.Fatalf("hookintest: worker: %v", err)
	}
	ic, err := starter.DialLazy(cfg, log)
	if err != nil {
		wc.Close()
		h.t.Fatalf("hookintest: temporal: %v", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatalf("hookintest: listen: %v", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	werr, ierr := make(chan error, 1), make(chan error, 1)
	go func() { werr <- app.RunWorker(rctx, cfg, wc, acts, m, "", log) }()
	in := app.NewIntake(cfg, h.intake, ic, metrics.New(), log, h.biz.Router(cfg, h.intake, log))
	go func() { ierr <- in.Run(rctx, "", ln, log) }()
	h.t.Cleanup(func() {
		cancel()
		// The test's outcome was decided before its cleanup: an error
		// here is how a process stopped, worth a line in a failing test.
		if err := <-ierr; err != nil {
			h.t.Logf("hookintest: the intake stopped: %v", err)
		}
		if err := <-werr; err != nil {
			h.t.Logf("hookintest: the worker stopped: %v", err)
		}
		ic.Close()
		wc.Close()
	})
	svc := &ops.Service{Store: h.owner, Routes: h.biz.Router(cfg, h.owner, log), Handled: h.biz.Routes, Doorbell: app.Resources(cfg, ic), Temporal: ic, Config: cfg,
		Logger: log, SignalTimeout: 10 * time.Second}
	return &Stack{URL: "http://" + ln.Addr().String(), MailURL: mailURL, h: h, ops: svc}
}

// Posted is the intake's answer to Post.
type Posted struct {
	// Status is the HTTP status the intake answered.
	Status int
	// Key is the event key of the inbox row holding the body (a duplicate's
	// is the row it duplicates); zero when the intake stored nothing (a
	// handshake answered, a delivery refused or quarantined).
	Key EventKey
	// Body is the intake's response body (a handshake's reply).
	Body []byte
}

// Post sends body to /webhooks/slug as its provider would, signed with
// secret at the real time (the running intake's clock; SetNow is not) and
// header's other headers, and returns the intake's answer with the event
// key it stored.
func (s *Stack) Post(ctx context.Context, slug, secret string, header http.Header, body []byte) Posted {
	s.h.t.Helper()
	ep, err := s.h.adm.Endpoint(ctx, slug)
	if err != nil {
		s.h.t.Fatalf("hookintest: endpoint %s: %v", slug, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/webhooks/"+slug, bytes.NewReader(body))
	if err != nil {
		s.h.t.Fatalf("hookintest: %v", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if err := Sign(ep.Provider, secret, req.Header, body, time.Now()); err != nil {
		s.h.t.Fatalf("hookintest: sign: %v", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.h.t.Fatalf("hookintest: post: %v", err)
	}
	reply, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		s.h.t.Fatalf("hookintest: post: %v", err)
	}
	p := Posted{Status: res.StatusCode, Body: reply}
	if res.StatusCode/100 != 2 {
		return p
	}
	sum := sha256.Sum256(body)
	err = s.h.DB.QueryRow(ctx, `SELECT provider, source_account, environment, event_id FROM webhook_inbox
		WHERE endpoint_slug = $1 AND body_sha256 = $2 ORDER BY received_at DESC LIMIT 1`, slug, sum[:]).
		Scan(&p.Key.Provider, &p.Key.Account, &p.Key.Environment, &p.Key.EventID)
	if err == nil {
		return p
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		s.h.t.Fatalf("hookintest: post: the stored event: %v", err)
	}
	// No row holds these bytes: a redelivery of a stored event in another
	// serialization (a duplicate the provider's own comparison matched).
	// The answer names its key; the row under it is the one it duplicates.
	var answered struct {
		Event  string `json:"event"`
		Status string `json:"status"`
	}
	if json.Unmarshal(reply, &answered) != nil || answered.Status != "duplicate" || answered.Event == "" {
		return p
	}
	k, kerr := hookintype.ParseEventKey(answered.Event)
	if kerr != nil {
		return p
	}
	var n int
	if err := s.h.DB.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox
		WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
		k.Provider, k.Account, k.Environment, k.EventID).Scan(&n); err != nil {
		s.h.t.Fatalf("hookintest: post: the stored event: %v", err)
	}
	if n == 1 {
		p.Key = k
	}
	return p
}

// Replay replays an event as `hookinbox replay --force` does: its row is
// pending again and its workflow is rung; the handler runs again, so
// business keys must make it change nothing.
func (s *Stack) Replay(ctx context.Context, key EventKey, reason string) {
	s.h.t.Helper()
	sum, err := s.ops.Replay(ctx, ops.Actor{Name: "hookintest"}, ops.ReplayRequest{Keys: []EventKey{key}, Reason: reason, Force: true})
	if err != nil {
		s.h.t.Fatalf("hookintest: replay %s: %v", key, err)
	}
	if sum.Replayed != 1 {
		s.h.t.Fatalf("hookintest: replay %s: %+v", key, sum)
	}
}

// WaitFor waits until the event's inbox row has status (done, failed, …),
// failing the test after timeout.
func (s *Stack) WaitFor(ctx context.Context, key EventKey, status string, timeout time.Duration) {
	s.h.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		var st string
		err := s.h.DB.QueryRow(ctx, `SELECT status FROM webhook_inbox
			WHERE provider = $1 AND source_account = $2 AND environment = $3 AND event_id = $4`,
			key.Provider, key.Account, key.Environment, key.EventID).Scan(&st)
		if err == nil && st == status {
			return
		}
		last = fmt.Sprint(st, err)
		time.Sleep(100 * time.Millisecond)
	}
	s.h.t.Fatalf("hookintest: event %s is not %s after %s (last: %s)", key, status, timeout, last)
}
