package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// notificationRoutes are the API and console routes of notification rules:
// read by viewers (never a secret, a Slack URL by its origin only), added,
// removed and tested by admins (they say where operators' notices go, and
// may hold a secret).
func (s *Server) notificationRoutes() []route {
	return []route{
		{api: true, method: "GET", pattern: "/api/notifications", role: viewer, summary: "Notification rules, what each has firing and its latest notices (with their outbox status); secrets are never shown", h: s.apiNotificationsList},
		{api: true, method: "GET", pattern: "/api/notifications/{name}", role: viewer, summary: "One notification rule", h: s.apiNotificationGet},
		{api: true, method: "POST", pattern: "/api/notifications", role: admin, summary: "Add a notification rule: {name, triggers, email | slack_url | webhook_url + secret, workspace, endpoint, window (\"15m\"), pending_age, allow_private, reason}", h: s.apiNotificationAdd},
		{api: true, method: "DELETE", pattern: "/api/notifications/{name}", role: admin, summary: "Remove a notification rule (its notices stay)", h: s.apiNotificationRemove, params: []string{"reason"}},
		{api: true, method: "POST", pattern: "/api/notifications/{name}/test", role: admin, summary: "Send a test notice through the rule's channel now: {reason} → what the channel answered (ok, answer, error); audited", h: s.apiNotificationTest},
		{method: "GET", pattern: "/notifications", role: viewer, h: s.webNotificationsPage},
		{method: "POST", pattern: "/notifications", role: admin, h: s.webNotificationAdd},
		{method: "POST", pattern: "/notifications/{name}/test", role: admin, h: s.webNotificationTest},
		{method: "POST", pattern: "/notifications/{name}/remove", role: admin, h: s.webNotificationRemove},
	}
}

func (s *Server) apiNotificationsList(w http.ResponseWriter, r *http.Request, p *principal) error {
	vs, err := s.listNotifications(r, p)
	return reply(w, http.StatusOK, vs, err)
}

func (s *Server) apiNotificationGet(w http.ResponseWriter, r *http.Request, p *principal) error {
	v, err := s.ops.ShowNotification(r.Context(), r.PathValue("name"))
	asSeenBy(p, &v)
	return reply(w, http.StatusOK, v, err)
}

// listNotifications lists the rules as p may see them: a viewer gets a
// webhook rule's origin only.
func (s *Server) listNotifications(r *http.Request, p *principal) ([]ops.NotificationView, error) {
	vs, err := s.ops.ListNotifications(r.Context())
	eachAsSeenBy(p, vs)
	return vs, err
}

// notificationBody is a notification rule as the API takes it (durations
// as "15m").
type notificationBody struct {
	Name         string   `json:"name"`
	Triggers     []string `json:"triggers"`
	Email        string   `json:"email"`
	SlackURL     string   `json:"slack_url"`
	WebhookURL   string   `json:"webhook_url"`
	Secret       string   `json:"secret"`
	Workspace    string   `json:"workspace"`
	Endpoint     string   `json:"endpoint"`
	Window       string   `json:"window"`
	PendingAge   string   `json:"pending_age"`
	AllowPrivate bool     `json:"allow_private"`
	Reason       string   `json:"reason"`
}

func parseDuration(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := ops.ParseAge(v)
	if err != nil {
		return 0, badRequest("%s must be a duration such as 15m, 2h or 1d (got %q)", field, v)
	}
	return d, nil
}

func (b notificationBody) spec() (ops.NotificationSpec, error) {
	window, err := parseDuration("window", b.Window)
	if err != nil {
		return ops.NotificationSpec{}, err
	}
	age, err := parseDuration("pending_age", b.PendingAge)
	if err != nil {
		return ops.NotificationSpec{}, err
	}
	return ops.NotificationSpec{Name: b.Name, Triggers: b.Triggers, Email: b.Email, SlackURL: b.SlackURL, WebhookURL: b.WebhookURL,
		Secret: b.Secret, Workspace: b.Workspace, Endpoint: b.Endpoint, Window: window, PendingAge: age, AllowPrivate: b.AllowPrivate}, nil
}

func (s *Server) apiNotificationAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b notificationBody
	if err := decode(r, &b); err != nil {
		return err
	}
	spec, err := b.spec()
	if err != nil {
		return err
	}
	v, err := s.ops.AddNotification(r.Context(), p.actor(), spec, b.Reason)
	return reply(w, http.StatusCreated, v, err)
}

func (s *Server) apiNotificationRemove(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.ops.RemoveNotification(r.Context(), p.actor(), r.PathValue("name"), r.URL.Query().Get("reason")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) apiNotificationTest(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &b); err != nil {
			return err
		}
	}
	res, err := s.ops.TestNotification(r.Context(), p.actor(), r.PathValue("name"), b.Reason)
	return reply(w, http.StatusOK, res, err)
}

// The notifications page's notices after an act (fixed texts by id, as
// every flash: a crafted link cannot make the console say anything else).
const (
	flashNotificationAdded   = "notification-added"
	flashNotificationRemoved = "notification-removed"
)

func init() {
	flashes[flashNotificationAdded] = "Notification rule added: the notify schedule evaluates it from its next run (HOOKINBOX_NOTIFY_INTERVAL)."
	flashes[flashNotificationRemoved] = "Notification rule removed: nothing more is decided for it; its notices stay."
}

// notificationsPage is the console's notifications page; Test is what a
// rule's channel answered the test just sent from it.
type notificationsPage struct {
	Rules    []ops.NotificationView
	Triggers []string
	Test     *ops.NotificationTest
}

func (s *Server) webNotificationsPage(w http.ResponseWriter, r *http.Request, p *principal) error {
	return s.renderNotifications(w, r, p, nil)
}

func (s *Server) renderNotifications(w http.ResponseWriter, r *http.Request, p *principal, test *ops.NotificationTest) error {
	vs, err := s.listNotifications(r, p)
	if err != nil {
		return err
	}
	return s.render(w, r, p, http.StatusOK, "notifications", "Notifications", notificationsPage{Rules: vs, Triggers: notify.Triggers, Test: test})
}

func (s *Server) webNotificationAdd(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("bad form: %v", err)
	}
	f := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	b := notificationBody{Name: f("name"), Triggers: r.PostForm["trigger"], Workspace: f("workspace"), Endpoint: f("endpoint"),
		Window: f("window"), PendingAge: f("pending_age"), AllowPrivate: f("allow_private") == "on", Reason: f("reason")}
	switch f("channel") {
	case notify.ChannelEmail:
		b.Email = f("target")
	case notify.ChannelSlack:
		b.SlackURL = f("target")
	case notify.ChannelWebhook:
		b.WebhookURL, b.Secret = f("target"), f("secret")
	default:
		return badRequest("channel must be email, slack or webhook")
	}
	spec, err := b.spec()
	if err != nil {
		return err
	}
	v, err := s.ops.AddNotification(r.Context(), p.actor(), spec, b.Reason)
	if err != nil {
		return err
	}
	return redirect(w, r, "/notifications#"+url.PathEscape(v.Name), flashNotificationAdded)
}

// webNotificationTest shows what the channel answered on the page itself
// (the answer is the channel's own text: no fixed flash can say it).
func (s *Server) webNotificationTest(w http.ResponseWriter, r *http.Request, p *principal) error {
	res, err := s.ops.TestNotification(r.Context(), p.actor(), r.PathValue("name"), r.PostFormValue("reason"))
	if err != nil {
		return err
	}
	return s.renderNotifications(w, r, p, &res)
}

func (s *Server) webNotificationRemove(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.ops.RemoveNotification(r.Context(), p.actor(), r.PathValue("name"), r.PostFormValue("reason")); err != nil {
		return err
	}
	return redirect(w, r, "/notifications", flashNotificationRemoved)
}
