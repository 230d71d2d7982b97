package forward

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookinbox/hookinbox/internal/tracing"
)

// traceForward starts the POST's client span under ctx's span and puts its
// W3C traceparent on h, so that the team's service continues the
// delivery's trace. ctx's span is the handling activity's (tracing on);
// without a recording one (tracing off) nothing is started and no header
// is set. end records the answer and ends the span.
func traceForward(ctx context.Context, route string, h http.Header) (end func(status int, err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return func(int, error) {}
	}
	ctx, span := parent.TracerProvider().Tracer(tracing.Scope).Start(ctx, "forward POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", http.MethodPost), attribute.String("hookinbox.route", route)))
	tracing.InjectHeader(ctx, h)
	return func(status int, err error) {
		if status > 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		tracing.Fail(span, err)
		span.End()
	}
}
