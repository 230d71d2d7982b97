package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
)

// NotificationSpec is a notification rule to add: its triggers, one
// channel (exactly one of Email, SlackURL, WebhookURL), its scope and its
// window.
type NotificationSpec struct {
	Name string `json:"name"`
	// Triggers are notify.Triggers, or "all".
	Triggers []string `json:"triggers"`
	// Email: notices go through the outbox to this address.
	Email string `json:"email,omitempty"`
	// SlackURL is a Slack-compatible incoming webhook's URL: its own
	// credential, so it is sealed and shown by its origin only.
	SlackURL string `json:"slack_url,omitempty"`
	// WebhookURL gets each notice as a JSON document signed with Secret
	// (Standard Webhooks, whsec_…).
	WebhookURL string `json:"webhook_url,omitempty"`
	Secret     string `json:"secret,omitempty"`
	// Workspace and Endpoint narrow the rule to one workspace's or one
	// endpoint's items ("" is every one).
	Workspace string `json:"workspace,omitempty"`
	Endpoint  string `json:"endpoint,omitempty"`
	// Window groups notices: one per (rule, trigger, subject) per window
	// (0: notify.DefaultWindow).
	Window time.Duration `json:"window,omitempty"`
	// PendingAge is the pending_age trigger's threshold (0:
	// notify.DefaultPendingAge).
	PendingAge time.Duration `json:"pending_age,omitempty"`
	// AllowPrivate lets a URL be a loopback or private address (a receiver
	// beside hookinbox), on purpose; audited.
	AllowPrivate bool `json:"allow_private,omitempty"`
}

// NotificationView is a rule as shown: never its secret, a Slack URL by its
// origin only; what is firing and its latest notices.
type NotificationView struct {
	Name         string                 `json:"name"`
	Triggers     []string               `json:"triggers"`
	Channel      string                 `json:"channel"`
	Target       string                 `json:"target"`
	Signed       bool                   `json:"signed"`
	SecretKeyID  string                 `json:"secret_key_id,omitempty"`
	Workspace    string                 `json:"workspace,omitempty"`
	Endpoint     string                 `json:"endpoint,omitempty"`
	Window       string                 `json:"window"`
	PendingAge   string                 `json:"pending_age"`
	AllowPrivate bool                   `json:"allow_private"`
	Enabled      bool                   `json:"enabled"`
	CreatedAt    string                 `json:"created_at"`
	Firing       []notifications.Firing `json:"firing"`
	Recent       []notifications.Notice `json:"recent"`
}

func notificationTarget(name string) string { return "notification:" + name }

// checkNotifyURL checks a channel's URL: http(s), no credentials or
// fragment, https unless private addresses are allowed, and no literal
// private, loopback or link-local address without that (a name that
// resolves to one is refused by the guard at each send). Errors name the
// URL's origin only: a Slack URL's path is its token.
func checkNotifyURL(what, raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return Invalidf("%s must be an http(s) URL", what)
	}
	if u.User != nil {
		return Invalidf("%s must not carry credentials", what)
	}
	if u.Fragment != "" {
		return Invalidf("%s must not have a fragment", what)
	}
	host := strings.Trim(u.Hostname(), "[]")
	if addr, err := netip.ParseAddr(host); (err == nil && !(outbound.Guard{}).Allowed(addr) || host == "localhost") && !allowPrivate {
		return Invalidf("%s %s is a private, loopback or link-local address: pass --allow-private for a receiver beside hookinbox", what, outbound.Origin(raw))
	}
	if u.Scheme != "https" && !allowPrivate {
		return Invalidf("%s must be https (plain http only to a private address, with --allow-private)", what)
	}
	return nil
}

// notificationRule validates spec into the rule to store (its secret set).
func (s *Service) notificationRule(ctx context.Context, spec NotificationSpec) (notifications.Rule, error) {
	r := notifications.Rule{Name: spec.Name, Workspace: strings.TrimSpace(spec.Workspace), Endpoint: strings.TrimSpace(spec.Endpoint),
		Window: spec.Window, PendingAge: spec.PendingAge, AllowPrivate: spec.AllowPrivate, Enabled: true}
	if !SlugPattern.MatchString(r.Name) {
		return r, Invalidf("notification rule name must be 1-63 lowercase letters, digits, '-' or '_' (got %q)", r.Name)
	}
	triggers, err := notify.ParseTriggers(spec.Triggers)
	if err != nil {
		return r, Invalidf("%v", err)
	}
	r.Triggers = triggers
	given := 0
	for _, v := range []string{spec.Email, spec.SlackURL, spec.WebhookURL} {
		if strings.TrimSpace(v) != "" {
			given++
		}
	}
	if given != 1 {
		return r, Invalidf("give exactly one channel: an email address, a Slack webhook URL or a webhook URL (with its secret)")
	}
	switch {
	case spec.Email != "":
		a, err := mail.ParseAddress(strings.TrimSpace(spec.Email))
		if err != nil {
			return r, Invalidf("email: %v", err)
		}
		if spec.Secret != "" {
			return r, Invalidf("a secret is a webhook's: an email rule takes none")
		}
		r.Channel, r.Target = notify.ChannelEmail, a.Address
	case spec.SlackURL != "":
		if err := checkNotifyURL("Slack webhook URL", spec.SlackURL, spec.AllowPrivate); err != nil {
			return r, err
		}
		if spec.Secret != "" {
			return r, Invalidf("a Slack webhook's URL is its own secret: it takes no --secret")
		}
		r.Channel, r.Target, r.Secret = notify.ChannelSlack, outbound.Origin(spec.SlackURL), spec.SlackURL
	default:
		if err := checkNotifyURL("webhook URL", spec.WebhookURL, spec.AllowPrivate); err != nil {
			return r, err
		}
		if err := validateSecret(keys.ProviderStandard, spec.Secret); err != nil {
			return r, Invalidf("secret: %v (a Standard Webhooks secret: whsec_ and base64 of at least 24 random bytes)", err)
		}
		r.Channel, r.Target, r.Secret = notify.ChannelWebhook, spec.WebhookURL, spec.Secret
	}
	if r.Window == 0 {
		r.Window = notify.DefaultWindow
	}
	if r.Window < notify.MinWindow || r.Window > notify.MaxWindow || r.Window%time.Second != 0 {
		return r, Invalidf("window must be whole seconds between %s and %s (got %s)", notify.MinWindow, notify.MaxWindow, r.Window)
	}
	if r.PendingAge != 0 && !slices.Contains(r.Triggers, notify.TriggerPendingAge) {
		return r, Invalidf("a pending age is the %s trigger's threshold: add that trigger, or leave it out", notify.TriggerPendingAge)
	}
	if r.PendingAge == 0 {
		r.PendingAge = notify.DefaultPendingAge
	}
	if r.PendingAge < time.Second || r.PendingAge > notify.MaxWindow || r.PendingAge%time.Second != 0 {
		return r, Invalidf("pending age must be whole seconds between 1s and %s (got %s)", notify.MaxWindow, r.PendingAge)
	}
	if (r.Workspace != "" || r.Endpoint != "") && slices.Contains(r.Triggers, notify.TriggerScheduleFailed) {
		return r, Invalidf("%s is about hookinbox's schedules, not one workspace's or endpoint's: give it a rule without --workspace and --endpoint", notify.TriggerScheduleFailed)
	}
	if r.Endpoint != "" && slices.Contains(r.Triggers, notify.TriggerOutbox) {
		return r, Invalidf("%s counts outbox rows by workspace, and they have no endpoint: narrow it with --workspace instead", notify.TriggerOutbox)
	}
	wsOK, epOK, err := notifications.ScopeExists(ctx, s.Store.Pool, r.Workspace, r.Endpoint)
	if err != nil {
		return r, err
	}
	if !wsOK {
		return r, Invalidf("workspace %q does not exist", r.Workspace)
	}
	if !epOK {
		return r, Invalidf("endpoint %q does not exist", r.Endpoint)
	}
	return r, nil
}

func notificationDetails(r notifications.Rule) map[string]any {
	return map[string]any{"triggers": r.Triggers, "channel": r.Channel, "target": r.Target, "workspace": r.Workspace,
		"endpoint": r.Endpoint, "window": r.Window.String(), "pending_age": r.PendingAge.String(), "allow_private": r.AllowPrivate}
}

// AddNotification registers a notification rule: validated (nothing is
// stored on bad input), its secret sealed, audited without it. The notify
// schedule evaluates it from its next run.
func (s *Service) AddNotification(ctx context.Context, who Actor, spec NotificationSpec, reason string) (NotificationView, error) {
	if err := who.check(); err != nil {
		return NotificationView{}, err
	}
	r, err := s.notificationRule(ctx, spec)
	if err != nil {
		return NotificationView{}, err
	}
	var kr = s.Store.Keys
	if r.Secret != "" {
		if kr, err = s.Store.Keyring(); err != nil {
			return NotificationView{}, err
		}
	}
	err = pgx.BeginFunc(ctx, s.Store.Pool, func(tx pgx.Tx) error {
		if err := notifications.Insert(ctx, tx, kr, r); err != nil {
			return err
		}
		_, err := s.audit(ctx, tx, who, "notification_add", notificationTarget(r.Name), reason, notificationDetails(r))
		return err
	})
	if errors.Is(err, store.ErrConflict) {
		return NotificationView{}, &ConflictError{Err: err}
	}
	if err != nil {
		return NotificationView{}, err
	}
	return s.ShowNotification(ctx, r.Name)
}

// RemoveNotification removes a rule and its states (no recovery notice
// follows what was firing); its notices stay, with their outbox rows.
// Audited.
func (s *Service) RemoveNotification(ctx context.Context, who Actor, name, reason string) error {
	if err := who.check(); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.Store.Pool, func(tx pgx.Tx) error {
		if err := notifications.Delete(ctx, tx, name); err != nil {
			return err
		}
		_, err := s.audit(ctx, tx, who, "notification_remove", notificationTarget(name), reason, nil)
		return err
	})
}

// OriginsOnly cuts a webhook rule's URL to its origin, for viewers: its
// path and query may carry a token (a Slack rule's target is an origin
// already; its URL is the rule's secret).
func (v *NotificationView) OriginsOnly() {
	if v.Channel == notify.ChannelWebhook {
		v.Target = URLOrigin(v.Target)
	}
}

// ListNotifications lists every rule, with what is firing and its latest
// notices.
func (s *Service) ListNotifications(ctx context.Context) ([]NotificationView, error) {
	rs, err := notifications.List(ctx, s.Store.Pool, false)
	if err != nil {
		return nil, err
	}
	out := make([]NotificationView, 0, len(rs))
	for _, r := range rs {
		v, err := s.notificationView(ctx, &r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ShowNotification reads one rule.
func (s *Service) ShowNotification(ctx context.Context, name string) (NotificationView, error) {
	r, err := notifications.Get(ctx, s.Store.Pool, name)
	if err != nil {
		return NotificationView{}, err
	}
	return s.notificationView(ctx, r)
}

func (s *Service) notificationView(ctx context.Context, r *notifications.Rule) (NotificationView, error) {
	v := NotificationView{Name: r.Name, Triggers: r.Triggers, Channel: r.Channel, Target: r.Target, Signed: r.SecretKeyID != "",
		SecretKeyID: r.SecretKeyID, Workspace: r.Workspace, Endpoint: r.Endpoint, Window: r.Window.String(),
		PendingAge: r.PendingAge.String(), AllowPrivate: r.AllowPrivate, Enabled: r.Enabled,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339)}
	var err error
	if v.Firing, err = notifications.ListFiring(ctx, s.Store.Pool, r.Name); err != nil {
		return v, err
	}
	if v.Recent, err = notifications.RecentNotices(ctx, s.Store.Pool, r.Name, 10); err != nil {
		return v, err
	}
	return v, nil
}

// NotificationTest is what a rule's channel answered a test notice.
type NotificationTest struct {
	Rule    string `json:"rule"`
	Channel string `json:"channel"`
	Target  string `json:"target"`
	// OK: the channel accepted it.
	OK bool `json:"ok"`
	// Answer is what the channel said: an HTTP status and the start of its
	// body (the status only from a private or loopback address, which the
	// rule or the process allows: an internal service's answer is not
	// reported), or the mailer's id of the message.
	Answer string `json:"answer,omitempty"`
	// Error says why it was not accepted (never the URL's path or query).
	Error        string `json:"error,omitempty"`
	OperationKey string `json:"operation_key"`
	ActionID     int64  `json:"operator_action"`
}

// TestNotification sends a test notice through the rule's channel now
// (not through the outbox: the point is to see the answer) and says what
// the channel answered. Audited, accepted or not; a channel that refused
// is a result with OK false, not an error.
func (s *Service) TestNotification(ctx context.Context, who Actor, name, reason string) (NotificationTest, error) {
	if err := who.check(); err != nil {
		return NotificationTest{}, err
	}
	r, err := notifications.Open(ctx, s.Store, name)
	if err != nil {
		return NotificationTest{}, err
	}
	now := time.Now().UTC()
	op := keys.Join("notification-test", r.Name, now.Format(time.RFC3339Nano))
	rule := notify.Rule{Name: r.Name, Channel: r.Channel, Workspace: r.Workspace, Endpoint: r.Endpoint, Window: r.Window, PendingAge: r.PendingAge}
	doc := notify.TestDocument(rule, op, now, []notify.Link{{Name: "Notification rules", URL: s.Config.ConsoleBaseURL() + "/notifications"}})
	res := NotificationTest{Rule: r.Name, Channel: r.Channel, Target: r.Target, OperationKey: op}
	body, err := json.Marshal(doc)
	if err != nil {
		return res, err
	}
	msg := outbound.Message{Key: op, To: r.Target, Subject: doc.Title, Text: doc.Text, Body: body}
	g := outbound.Guard{AllowPrivate: s.Config.OutboundAllowPrivate || r.AllowPrivate}
	// A copy of the process-wide guarded client, wrapped: the shared one
	// is never rewired (it serves every send and forward of the process).
	// Where private addresses are allowed the answer may be an internal
	// service's: its body is never reported, only its status.
	shared := g.Client(10 * time.Second)
	hc := new(http.Client)
	*hc = *shared
	rec := &answerRecorder{rt: shared.Transport, statusOnly: g.AllowPrivate}
	hc.Transport = rec
	var sender outbound.Sender
	switch r.Channel {
	case notify.ChannelEmail:
		if s.Mailer == nil {
			return res, errors.New("this process has no mailer configured (HOOKINBOX_MAILER)")
		}
		sender = s.Mailer
	case notify.ChannelSlack:
		sender = &outbound.SlackSender{URL: r.Secret, Client: hc}
	case notify.ChannelWebhook:
		sender = &outbound.WebhookSender{URL: r.Target, Secret: r.Secret, Client: hc}
	default:
		return res, fmt.Errorf("rule %s: unknown channel %q", r.Name, r.Channel)
	}
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	remoteID, sendErr := sender.Send(tctx, msg)
	cancel()
	res.OK = sendErr == nil
	status := rec.status()
	res.Answer = rec.answer()
	if r.Channel == notify.ChannelEmail && sendErr == nil {
		res.Answer = "accepted"
		if remoteID != "" {
			res.Answer += " as " + remoteID
		}
	}
	if sendErr != nil {
		res.Error = sendErr.Error()
	}
	details := map[string]any{"channel": r.Channel, "target": r.Target, "ok": res.OK, "operation_key": op}
	if status != "" {
		details["answer"] = status // the status only: a body may echo anything
	}
	if res.Error != "" {
		details["error"] = res.Error
	}
	res.ActionID, err = s.audit(ctx, s.Store.Pool, who, "notification_test", notificationTarget(r.Name), reason, details)
	return res, err
}

// answerRecorder is an http.RoundTripper that keeps the answer's status and
// the start of its body, for the test's report.
type answerRecorder struct {
	rt http.RoundTripper
	// statusOnly keeps no body (an answer from a private address).
	statusOnly bool

	mu   sync.Mutex
	code int
	body string
}

func (a *answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if a.statusOnly {
		a.mu.Lock()
		a.code = resp.StatusCode
		a.mu.Unlock()
		return resp, nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	a.mu.Lock()
	a.code, a.body = resp.StatusCode, strings.Join(strings.Fields(strings.ToValidUTF8(string(head), "")), " ")
	a.mu.Unlock()
	resp.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(head), resp.Body), Closer: resp.Body}
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

func (a *answerRecorder) status() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.code == 0 {
		return ""
	}
	return fmt.Sprintf("HTTP %d", a.code)
}

func (a *answerRecorder) answer() string {
	st := a.status()
	a.mu.Lock()
	defer a.mu.Unlock()
	if st == "" || a.body == "" {
		return st
	}
	return st + ": " + a.body
}
