package starter

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// PrometheusMetrics exports the Temporal SDK's own metrics (workflow task
// latency, activity failures, poller counts, …: names start with
// "temporal_") on reg, through the SDK's OpenTelemetry contrib handler and
// the OpenTelemetry Prometheus exporter. Register it once per registry.
func PrometheusMetrics(reg prometheus.Registerer, log *slog.Logger) (client.MetricsHandler, error) {
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("temporal SDK metrics exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: mp.Meter("temporal-sdk-go"),
		OnError: func(err error) {
			log.Warn("temporal SDK metric not recorded", "error", err.Error())
		},
	}), nil
}

// Option adjusts the client options Dial and DialLazy build.
type Option func(*client.Options)

// WithMetrics sets the SDK's metrics handler (see PrometheusMetrics).
func WithMetrics(h client.MetricsHandler) Option {
	return func(o *client.Options) { o.MetricsHandler = h }
}
