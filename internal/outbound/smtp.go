package outbound

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strings"
	"time"
)

// SMTPMailer sends email over SMTP with a Message-ID derived from the
// operation key, so every attempt of one operation carries the same id and a
// duplicate can be recognised downstream. SMTP has no idempotency, so it is
// not Idempotent; with LookupURL (Mailpit's HTTP API) it can be asked
// whether a message was delivered.
//
// Security follows TLS: "auto" (the default when empty) is "required" for
// a relay on another host and "starttls" for one on loopback; "starttls"
// upgrades the connection when the server offers STARTTLS and refuses to
// send credentials without it (opportunistic: an attacker in the middle
// can strip the offer); "required" refuses a server that does not offer
// it; "off" never upgrades (a local relay such as Mailpit). With Username
// set, the mailer authenticates with AUTH PLAIN after the upgrade.
type SMTPMailer struct {
	Addr string
	From string
	// TLS is "auto" (default), "starttls", "required" or "off".
	TLS string
	// TLSConfig overrides the client TLS settings (tests: a private CA).
	TLSConfig *tls.Config
	// Username and Password authenticate with AUTH PLAIN.
	Username string
	Password string
	// LookupURL is a Mailpit API base URL used by Find; empty disables it.
	LookupURL string
	Timeout   time.Duration
	// Hostname for EHLO and the Message-ID's right side.
	Hostname string
}

// Idempotent is false: SMTP servers do not dedupe.
func (m *SMTPMailer) Idempotent() bool { return false }

// MessageID is the Message-ID of an operation key.
func (m *SMTPMailer) MessageID(key string) string {
	return "<" + StableID(key) + "@" + m.host() + ">"
}

func (m *SMTPMailer) host() string {
	if m.Hostname != "" {
		return m.Hostname
	}
	return "hookinbox.local"
}

// Send delivers the message. Failures before the final "." of DATA are
// definite (the server did not take the message); a failure reading the
// answer to it is uncertain (it may have).
func (m *SMTPMailer) Send(ctx context.Context, msg Message) (string, error) {
	op := "smtp " + m.Addr
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if strings.ContainsAny(msg.To, "\r\n") || strings.ContainsAny(m.From, "\r\n") {
		return "", &Error{Op: op, Permanent: true, Err: fmt.Errorf("address contains a line break")}
	}
	conn, err := Guard{AllowPrivate: true}.dial(ctx, m.Addr, timeout)
	if err != nil {
		return "", &Error{Op: op, Definite: true, Err: err}
	}
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(m.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return "", &Error{Op: op, Definite: true, Err: err}
	}
	defer c.Close()
	definite := func(err error) (string, error) {
		if isPermanentSMTP(err) {
			return "", &Error{Op: op, Permanent: true, Err: err}
		}
		return "", &Error{Op: op, Definite: true, Err: err}
	}
	if err := c.Hello(m.host()); err != nil {
		return definite(err)
	}
	if err := m.secure(c, host); err != nil {
		return "", &Error{Op: op, Permanent: isPermanentSMTP(err) || errors.Is(err, errNoTLS), Definite: true, Err: err}
	}
	if err := c.Mail(m.From); err != nil {
		return definite(err)
	}
	if err := c.Rcpt(msg.To); err != nil {
		return definite(err)
	}
	w, err := c.Data()
	if err != nil {
		return definite(err)
	}
	id := m.MessageID(msg.Key)
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: %s\r\nDate: %s\r\n",
		m.From, msg.To, mime.QEncoding.Encode("utf-8", msg.Subject), id, time.Now().UTC().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "X-Hookinbox-Operation: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n", mime.QEncoding.Encode("utf-8", msg.Key))
	b.WriteString(strings.ReplaceAll(msg.Text, "\n", "\r\n"))
	b.WriteString("\r\n")
	if _, err := w.Write([]byte(b.String())); err != nil {
		return definite(err)
	}
	if err := w.Close(); err != nil {
		if isPermanentSMTP(err) {
			return "", &Error{Op: op, Permanent: true, Err: err}
		}
		// The "." went out; whether the server queued the message is unknown.
		return "", &Error{Op: op, Err: err}
	}
	_ = c.Quit()
	return strings.Trim(id, "<>"), nil
}

// TLS modes of SMTPMailer.
const (
	// SMTPAuto is SMTPRequired for a relay on another host, SMTPStartTLS
	// for one on loopback (the default).
	SMTPAuto     = "auto"
	SMTPStartTLS = "starttls"
	SMTPRequired = "required"
	SMTPOff      = "off"
)

var errNoTLS = errors.New("server does not offer STARTTLS")

// secure upgrades the session with STARTTLS as TLS says, then
// authenticates. Credentials never cross an unencrypted connection to
// another host (net/smtp's PlainAuth refuses that, except to localhost).
func (m *SMTPMailer) secure(c *smtp.Client, host string) error {
	mode := m.TLS
	if mode == "" || mode == SMTPAuto {
		mode = SMTPRequired
		if loopbackHost(host) {
			mode = SMTPStartTLS
		}
	}
	if mode != SMTPOff {
		if ok, _ := c.Extension("STARTTLS"); ok {
			cfg := m.TLSConfig
			if cfg == nil {
				cfg = &tls.Config{MinVersion: tls.VersionTLS12}
			}
			cfg = cfg.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName = host
			}
			if err := c.StartTLS(cfg); err != nil {
				return fmt.Errorf("starttls: %w", err)
			}
		} else if mode == SMTPRequired {
			return errNoTLS
		}
	}
	if m.Username == "" {
		return nil
	}
	if ok, _ := c.Extension("AUTH"); !ok {
		return errors.New("server does not offer AUTH")
	}
	if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, host)); err != nil {
		return fmt.Errorf("auth as %s: %w", m.Username, err)
	}
	return nil
}

// loopbackHost reports whether host (of the relay's configured address)
// is this machine: localhost or a loopback address. A name is not
// resolved: one that resolves to loopback counts as another host.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// isPermanentSMTP reports a 5xx SMTP reply (permanent rejection).
func isPermanentSMTP(err error) bool {
	var tp *textproto.Error
	return errors.As(err, &tp) && tp.Code >= 500 && tp.Code < 600
}

// Find asks Mailpit's API whether a message with the operation's Message-ID
// arrived.
func (m *SMTPMailer) Find(ctx context.Context, key string) (bool, error) {
	if m.LookupURL == "" {
		return false, fmt.Errorf("no lookup configured")
	}
	q := url.Values{"query": {"message-id:" + strings.Trim(m.MessageID(key), "<>")}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(m.LookupURL, "/")+"/api/v1/search?"+q.Encode(), nil)
	if err != nil {
		return false, err
	}
	resp, err := client(nil).Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("mailpit search: HTTP %d", resp.StatusCode)
	}
	var out struct {
		MessagesCount int `json:"messages_count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return false, err
	}
	return out.MessagesCount > 0, nil
}
