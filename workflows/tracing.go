package workflows

import (
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// The workflow's own spans (the Temporal SDK's OpenTelemetry interceptor:
// StartActivity in the workflow, RunActivity in the worker) join the
// delivery's trace rather than the doorbell's: a resource workflow run
// serves many deliveries, and a doorbell is not one (doorbells coalesce, the
// sweeper re-rings). Before it schedules an event's HandleEvent, or the
// outbox rows that event's effect made, the workflow puts the event's stored
// traceparent on the activity's context (withDelivery); the interceptor's
// StartActivity span then has the intake's request span as its parent.

// spanKey is the interceptor's SpanContextKey: where it keeps the current
// span on a workflow.Context, and where withDelivery puts a delivery's.
type spanKey struct{}

// deliverySpan is a delivery's stored traceparent standing in for a
// parent span on a workflow.Context. It is only ever a parent: the
// interceptor never finishes a span it did not start.
type deliverySpan string

func (deliverySpan) Finish(*interceptor.TracerFinishSpanOptions) {}

// withDelivery is ctx with the delivery of traceparent tp as the parent of
// the spans the interceptor starts for activities scheduled on it. It sets
// nothing when tp is empty (tracing off at the intake, or a row from
// before it), so the workflow is unchanged then; with the interceptor off it
// is a value nobody reads. Deterministic: tp comes from an activity result
// recorded in the history.
func withDelivery(ctx workflow.Context, tp string) workflow.Context {
	if tp == "" {
		return ctx
	}
	return workflow.WithValue(ctx, spanKey{}, deliverySpan(tp))
}

// TracingInterceptor is the Temporal SDK's OpenTelemetry tracing
// interceptor on tp, for the resource worker (worker.Options.Interceptors),
// reading a delivery's traceparent put by the workflow as the parent of
// the activity spans it starts.
func TracingInterceptor(tp trace.TracerProvider) (interceptor.WorkerInterceptor, error) {
	t, err := temporalotel.NewTracer(temporalotel.TracerOptions{
		Tracer:                  tp.Tracer("go.temporal.io/sdk"),
		SpanContextKey:          spanKey{},
		AllowInvalidParentSpans: true,
		DisableBaggage:          true,
	})
	if err != nil {
		return nil, err
	}
	return interceptor.NewTracingInterceptor(deliveryTracer{t}), nil
}

// deliveryTracer is the SDK's OpenTelemetry tracer that also reads a
// deliverySpan parent.
type deliveryTracer struct{ interceptor.Tracer }

func (t deliveryTracer) ref(span interceptor.TracerSpanRef) interceptor.TracerSpanRef {
	if d, ok := span.(deliverySpan); ok {
		ref, err := t.UnmarshalSpan(map[string]string{"traceparent": string(d)})
		if err != nil {
			return nil // a malformed traceparent: a root, as without one
		}
		return ref
	}
	return span
}

// StartSpan starts a span whose parent may be a delivery's traceparent.
func (t deliveryTracer) StartSpan(o *interceptor.TracerStartSpanOptions) (interceptor.TracerSpan, error) {
	o.Parent = t.ref(o.Parent)
	return t.Tracer.StartSpan(o)
}

// MarshalSpan writes a delivery's traceparent as it is.
func (t deliveryTracer) MarshalSpan(span interceptor.TracerSpan) (map[string]string, error) {
	if d, ok := span.(deliverySpan); ok {
		return map[string]string{"traceparent": string(d)}, nil
	}
	return t.Tracer.MarshalSpan(span)
}
