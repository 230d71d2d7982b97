package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "defaults point at the local stack", env: nil, check: func(t *testing.T, c Config) {
			require.Contains(t, c.DatabaseURL, "127.0.0.1:55432")
			require.Equal(t, "127.0.0.1:7233", c.TemporalAddress)
			require.Equal(t, ":8080", c.HTTPAddr)
			require.Equal(t, 5*time.Minute, c.SignatureTolerance)
		}},
		{name: "internal listeners default to loopback", env: nil, check: func(t *testing.T, c Config) {
			require.Equal(t, "127.0.0.1:9090", c.InternalAddr)
			require.Equal(t, "127.0.0.1:9091", c.WorkerAddr)
			require.Equal(t, 5*time.Second, c.RequestTimeout)
		}},
		{name: "internal listener overridden", env: map[string]string{"HOOKINBOX_INTERNAL_ADDR": "0.0.0.0:9090", "HOOKINBOX_REQUEST_TIMEOUT": "2s"}, check: func(t *testing.T, c Config) {
			require.Equal(t, "0.0.0.0:9090", c.InternalAddr)
			require.Equal(t, 2*time.Second, c.RequestTimeout)
		}},
		{name: "internal listener on the public port", env: map[string]string{"HOOKINBOX_INTERNAL_ADDR": ":8080"}, wantErr: "HOOKINBOX_INTERNAL_ADDR"},
		{name: "overrides", env: map[string]string{"HOOKINBOX_HTTP_ADDR": ":9999", "HOOKINBOX_SIGNATURE_TOLERANCE": "30s", "TEMPORAL_NAMESPACE": "prod"}, check: func(t *testing.T, c Config) {
			require.Equal(t, ":9999", c.HTTPAddr)
			require.Equal(t, 30*time.Second, c.SignatureTolerance)
			require.Equal(t, "prod", c.TemporalNamespace)
		}},
		{name: "process database URLs fall back to DATABASE_URL", env: map[string]string{"DATABASE_URL": "postgres://owner@db/h"}, check: func(t *testing.T, c Config) {
			require.Equal(t, "postgres://owner@db/h", c.IntakeDB())
			require.Equal(t, "postgres://owner@db/h", c.WorkerDB())
			require.Equal(t, "postgres://owner@db/h", c.OperatorDB())
		}},
		{name: "each process its own database URL", env: map[string]string{"DATABASE_URL": "postgres://owner@db/h",
			"HOOKINBOX_INTAKE_DATABASE_URL": "postgres://hookinbox_intake@db/h", "HOOKINBOX_WORKER_DATABASE_URL": "postgres://hookinbox_worker@db/h",
			"HOOKINBOX_OPERATOR_DATABASE_URL": "postgres://hookinbox_operator@db/h"}, check: func(t *testing.T, c Config) {
			require.Equal(t, "postgres://hookinbox_intake@db/h", c.IntakeDB())
			require.Equal(t, "postgres://hookinbox_worker@db/h", c.WorkerDB())
			require.Equal(t, "postgres://hookinbox_operator@db/h", c.OperatorDB())
			require.Equal(t, "postgres://owner@db/h", c.DatabaseURL)
		}},
		{name: "bad duration names the variable", env: map[string]string{"HOOKINBOX_SWEEP_AFTER": "soon"}, wantErr: "HOOKINBOX_SWEEP_AFTER"},
		{name: "bad log format", env: map[string]string{"HOOKINBOX_LOG_FORMAT": "xml"}, wantErr: "HOOKINBOX_LOG_FORMAT"},
		{name: "cert without key", env: map[string]string{"TEMPORAL_TLS_CERT": "/c.pem"}, wantErr: "TEMPORAL_TLS_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromLookup(lookup(tt.env))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestTracesFollowTheOpenTelemetryVariables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "unset: off", env: map[string]string{}, want: ""},
		{name: "base endpoint plus the signal's path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318/"},
			want: "http://jaeger:4318/v1/traces"},
		{name: "the traces endpoint as it is, over the base", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b.example/otlp/traces"}, want: "https://b.example/otlp/traces"},
		{name: "the SDK switched off", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "TRUE"}},
		{name: "no traces exporter", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "grpc is refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wantErr: "http/protobuf"},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "a:4318"}, wantErr: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "a trace URL must be one", env: map[string]string{"HOOKINBOX_TRACE_URL": "jaeger/{trace_id}"}, wantErr: "HOOKINBOX_TRACE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := FromLookup(lookup(tt.env))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, c.TracesEndpoint)
		})
	}
	c, err := FromLookup(lookup(map[string]string{"OTEL_SERVICE_NAME": "billing-hooks",
		"HOOKINBOX_TRACE_URL": "http://127.0.0.1:16686/trace/{trace_id}"}))
	require.NoError(t, err)
	require.Equal(t, "billing-hooks", c.ServiceName)
	require.Equal(t, "http://127.0.0.1:16686/trace/{trace_id}", c.TraceURL)
}
