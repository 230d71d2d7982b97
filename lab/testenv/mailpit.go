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
	bin, err := devenv.MailpitTool.Ensure(ctx, Root(t), os.Stderr)
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
