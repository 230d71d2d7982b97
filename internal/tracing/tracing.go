// Package tracing builds a process's OpenTelemetry tracer provider (OTLP
// over HTTP, configured by the standard OTEL_EXPORTER_OTLP_* and
// OTEL_SERVICE_NAME variables that internal/config reads) and carries a
// delivery's W3C traceparent between the intake, the inbox row and the
// worker's spans.
//
// Tracing is off unless an OTLP endpoint is configured: New returns nil, and
// every caller keeps a nil tracer and starts no span at all (no no-op span,
// no context, no allocation on the intake's path). It must not depend on the
// store, Temporal or the domains: the intake, admission, the activities and
// the forward sender all build on it.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of hookinbox's own spans.
const Scope = "github.com/hookinbox/hookinbox"

// Options configure a process's tracer provider.
type Options struct {
	// Endpoint is the OTLP/HTTP traces URL (config.Config.TracesEndpoint:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT
	// plus /v1/traces). Empty: tracing is off. The exporter reads the other
	// OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression,
	// certificates) itself.
	Endpoint string
	// Service is the service.name resource attribute (OTEL_SERVICE_NAME;
	// empty: "hookinbox-" + Process).
	Service string
	// Process names the hookinbox process (intake, worker), the
	// hookinbox.process resource attribute.
	Process string
}

// Provider is a process's tracer provider; a nil *Provider is tracing off.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New builds the provider of o: an OTLP/HTTP exporter behind a batching
// span processor, every span sampled (a delivery's trace is whole or
// absent). It returns nil, and no error, when o.Endpoint is empty.
func New(ctx context.Context, o Options) (*Provider, error) {
	if o.Endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(o.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter for %s: %w", o.Endpoint, err)
	}
	service := o.Service
	if service == "" {
		service = "hookinbox"
		if o.Process != "" {
			service += "-" + o.Process
		}
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if o.Process != "" {
		attrs = append(attrs, attribute.String("hookinbox.process", o.Process))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &Provider{tp: tp}, nil
}

// Tracer is hookinbox's tracer on p, or nil when p is nil (tracing off):
// callers test for nil rather than start no-op spans.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tp.Tracer(Scope)
}

// TracerProvider is p's OpenTelemetry provider (nil when off), for the
// Temporal SDK's interceptor.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if p == nil {
		return nil
	}
	return p.tp
}

// Shutdown exports what is buffered and stops p (nil: nothing to do).
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}

var w3c = propagation.TraceContext{}

// Traceparent is the W3C traceparent of sc ("" when sc is not valid).
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// Parse reads a W3C traceparent into a remote span context; the zero
// SpanContext (not valid) when tp is empty or malformed.
func Parse(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// StartUnder starts a span of t named name under the delivery whose stored
// traceparent is tp: as a child of ctx's span when that span is already in
// the delivery's trace (the Temporal interceptor's RunActivity span, whose
// parent the workflow set from the same traceparent), else as a child of
// tp itself. With no valid tp it is a child of ctx's span (or a root).
func StartUnder(ctx context.Context, t trace.Tracer, tp, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent := Parse(tp); parent.IsValid() {
		if cur := trace.SpanContextFromContext(ctx); cur.TraceID() != parent.TraceID() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		}
	}
	return t.Start(ctx, name, opts...)
}

// InjectHeader sets the W3C traceparent (and tracestate) of ctx's span on
// h, when that span is valid; it reports whether it did.
func InjectHeader(ctx context.Context, h interface{ Set(string, string) }) bool {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	w3c.Inject(ctx, setter{h})
	return true
}

type setter struct {
	h interface{ Set(string, string) }
}

func (s setter) Get(string) string { return "" }
func (s setter) Set(k, v string)   { s.h.Set(k, v) }
func (s setter) Keys() []string    { return nil }

// Fail records err on span as its error status (nil err: nothing).
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
