package starter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/hookinbox/hookinbox/internal/config"
)

// ClientOptions builds the Temporal client options from configuration:
// address, namespace, TLS or mTLS, and an API key for Temporal Cloud.
func ClientOptions(cfg config.Config, logger *slog.Logger) (client.Options, error) {
	o := client.Options{
		HostPort:  cfg.TemporalAddress,
		Namespace: cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(logger),
	}
	useTLS := cfg.TemporalTLS || cfg.TemporalAPIKey != "" || cfg.TemporalTLSCert != "" || cfg.TemporalTLSCA != ""
	if useTLS {
		t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.TemporalTLSServerName}
		if cfg.TemporalTLSCert != "" {
			cert, err := tls.LoadX509KeyPair(cfg.TemporalTLSCert, cfg.TemporalTLSKey)
			if err != nil {
				return o, fmt.Errorf("TEMPORAL_TLS_CERT/KEY: %w", err)
			}
			t.Certificates = []tls.Certificate{cert}
		}
		if cfg.TemporalTLSCA != "" {
			pem, err := os.ReadFile(cfg.TemporalTLSCA)
			if err != nil {
				return o, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return o, fmt.Errorf("TEMPORAL_TLS_CA: no certificate in %s", cfg.TemporalTLSCA)
			}
			t.RootCAs = pool
		}
		o.ConnectionOptions.TLS = t
	}
	if cfg.TemporalAPIKey != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(cfg.TemporalAPIKey)
	}
	return o, nil
}

// Dial connects and checks the server answers (worker, CLI).
func Dial(ctx context.Context, cfg config.Config, logger *slog.Logger, opts ...Option) (client.Client, error) {
	o, err := ClientOptions(cfg, logger)
	if err != nil {
		return nil, err
	}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := client.DialContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
	}
	return c, nil
}

// DialLazy returns a client that connects on first use: the intake starts
// and accepts webhooks while Temporal is down.
func DialLazy(cfg config.Config, logger *slog.Logger, opts ...Option) (client.Client, error) {
	o, err := ClientOptions(cfg, logger)
	if err != nil {
		return nil, err
	}
	for _, opt := range opts {
		opt(&o)
	}
	return client.NewLazyClient(o)
}
