package testenv

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// Mailpit starts a Mailpit (SMTP plus its HTTP API) for t alone, on free
// ports, persisted to a file so a test can Kill and Restart it. Stopped at
// cleanup.
func Mailpit(t testing.TB) *devenv.Mailpit {
	t.Helper()
	return MailpitWith(t, nil)
}

// MailpitWith is Mailpit with STARTTLS and checked credentials (tls set).
func MailpitWith(t testing.TB, tls *devenv.MailpitTLS) *devenv.Mailpit {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Mailpit: run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := devenv.MailpitTool.Binary(ctx, os.Stderr)
	if err != nil {
		t.Fatalf("mailpit: %v", err)
	}
	smtpPort, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	httpPort, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m, err := devenv.StartMailpit(ctx, devenv.MailpitOptions{Binary: bin, SMTPPort: smtpPort, HTTPPort: httpPort,
		DBFile: filepath.Join(t.TempDir(), "mailpit.db"), TLS: tls, Log: io.Discard})
	if err != nil {
		t.Fatalf("mailpit: %v", err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	return m
}

// Mail server variables: an SMTP server of the user's own for the tests that
// send mail through the stack (hookintest), and the Mailpit HTTP API to
// read it back from, if it is a Mailpit.
const (
	SMTPAddrEnv   = "HOOKINBOX_TEST_SMTP_ADDR"
	MailpitURLEnv = "HOOKINBOX_TEST_MAILPIT_URL"
)

// MailServer is where a stack the test starts sends mail: the SMTP server
// HOOKINBOX_TEST_SMTP_ADDR names (with HOOKINBOX_TEST_MAILPIT_URL, if set,
// as its HTTP API; no Mailpit is built or started), else a Mailpit for t
// alone (Mailpit).
func MailServer(t testing.TB) (smtpAddr, httpURL string) {
	t.Helper()
	if a := os.Getenv(SMTPAddrEnv); a != "" {
		return a, os.Getenv(MailpitURLEnv)
	}
	m := Mailpit(t)
	return m.SMTPAddr, m.HTTPURL
}
