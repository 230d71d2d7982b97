package keys

import "strings"

// TraceID is the trace id of a W3C traceparent (version 00:
// "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"), the id a trace UI
// finds a delivery's trace by; "" when tp is not such a traceparent or its
// trace id is all zeros (invalid).
func TraceID(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return ""
	}
	id := parts[1]
	if strings.Trim(id, "0") == "" {
		return ""
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return id
}

// TraceURL fills a trace UI's link template (HOOKINBOX_TRACE_URL, e.g.
// http://localhost:16686/trace/{trace_id}) with traceID; "" when either is
// empty.
func TraceURL(template, traceID string) string {
	if template == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(template, "{trace_id}", traceID)
}
