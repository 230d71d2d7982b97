package devenv

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// MailpitOptions describe a Mailpit server (SMTP plus web UI and HTTP API).
type MailpitOptions struct {
	Binary   string
	SMTPPort int
	HTTPPort int
	// DBFile persists messages; empty keeps them in a temporary file.
	DBFile string
	// TLS, when set, makes the SMTP side offer and require STARTTLS and
	// check credentials against an htpasswd-style file, like a production
	// relay; otherwise any credentials are accepted in the clear.
	TLS      *MailpitTLS
	Log      io.Writer
	Progress io.Writer
}

// MailpitTLS is a certificate and key for SMTP STARTTLS and a password file
// (user:{SHA}… or bcrypt lines) for SMTP AUTH.
type MailpitTLS struct {
	CertFile string
	KeyFile  string
	AuthFile string
}

// Mailpit is a running Mailpit, started here or found running.
type Mailpit struct {
	SMTPAddr string
	HTTPURL  string
	opts     MailpitOptions
	started  *proc
}

// StartMailpit starts Mailpit or reuses the one on the ports.
func StartMailpit(ctx context.Context, o MailpitOptions) (*Mailpit, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	m := &Mailpit{
		SMTPAddr: "127.0.0.1:" + strconv.Itoa(o.SMTPPort),
		HTTPURL:  "http://127.0.0.1:" + strconv.Itoa(o.HTTPPort),
		opts:     o,
	}
	if listening(m.SMTPAddr) && listening(m.httpAddr()) {
		fmt.Fprintf(o.Progress, "mailpit: reusing the server already on %s\n", m.SMTPAddr)
		return m, nil
	}
	return m, m.start(ctx)
}

func (m *Mailpit) httpAddr() string { return "127.0.0.1:" + strconv.Itoa(m.opts.HTTPPort) }

func (m *Mailpit) start(ctx context.Context) error {
	o := m.opts
	args := []string{"--smtp", m.SMTPAddr, "--listen", m.httpAddr(), "--quiet"}
	if t := o.TLS; t != nil {
		args = append(args, "--smtp-tls-cert", t.CertFile, "--smtp-tls-key", t.KeyFile, "--smtp-require-starttls",
			"--smtp-auth-file", t.AuthFile)
	} else {
		args = append(args, "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")
	}
	if o.DBFile != "" {
		args = append(args, "--database", o.DBFile)
	}
	p, err := startProc("mailpit", exec.Command(o.Binary, args...), o.Log, nil)
	if err != nil {
		return err
	}
	for _, a := range []string{m.SMTPAddr, m.httpAddr()} {
		if err := waitTCP(ctx, a, 30*time.Second, p); err != nil {
			p.kill()
			return fmt.Errorf("mailpit: %w", err)
		}
	}
	m.started = p
	fmt.Fprintf(o.Progress, "mailpit: started, SMTP %s, UI %s\n", m.SMTPAddr, m.HTTPURL)
	return nil
}

// Restart starts a stopped or killed Mailpit again on the same ports (with
// a DBFile, its messages survive).
func (m *Mailpit) Restart(ctx context.Context) error {
	if m.started != nil {
		return fmt.Errorf("mailpit is still running")
	}
	return m.start(ctx)
}

// Started reports whether this process started Mailpit.
func (m *Mailpit) Started() bool { return m.started != nil }

// Stop shuts down a Mailpit this process started.
func (m *Mailpit) Stop() error {
	if m == nil || m.started == nil {
		return nil
	}
	err := m.started.stop(syscall.SIGTERM, 10*time.Second)
	m.started = nil
	return err
}

// Kill ends Mailpit at once (tests of an SMTP outage); Restart brings it back.
func (m *Mailpit) Kill() {
	if m == nil || m.started == nil {
		return
	}
	m.started.kill()
	m.started = nil
}
