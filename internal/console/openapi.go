package console

import (
	"net/http"
	"regexp"
	"strings"
)

var pathParam = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}`)

// openAPI describes the API routes: each with its least role, in the
// summary and as x-hookinbox-role.
func (s *Server) openAPI() map[string]any {
	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		if !rt.api {
			continue
		}
		p := pathParam.ReplaceAllString(rt.pattern, "{$1}")
		op := map[string]any{
			"summary":          rt.summary,
			"x-hookinbox-role": orPublic(rt.role),
			"responses": map[string]any{
				"200": map[string]any{"description": "OK (201 created, 202 job queued, 204 no content)"},
				"400": map[string]any{"description": "bad input: nothing was done", "content": errorContent},
				"401": map[string]any{"description": "no valid token", "content": errorContent},
				"403": map[string]any{"description": "the token's role is below " + orPublic(rt.role), "content": errorContent},
				"404": map[string]any{"description": "not found", "content": errorContent},
				"409": map[string]any{"description": "refused by the current state", "content": errorContent},
				"503": map[string]any{"description": "Temporal, or the secrets key, is not available to this process", "content": errorContent},
			},
		}
		if rt.role != "" {
			op["summary"] = rt.summary + " [" + rt.role + "]"
			op["security"] = []map[string][]string{{"bearer": {}}}
		} else {
			op["security"] = []map[string][]string{}
		}
		var params []map[string]any
		for _, m := range pathParam.FindAllStringSubmatch(rt.pattern, -1) {
			desc := "path parameter"
			if m[2] != "" {
				desc = "the rest of the path; escape '/' inside a key part as %2F and '%' as %25"
			}
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"description": desc, "schema": map[string]string{"type": "string"}})
		}
		for _, q := range rt.params {
			params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]string{"type": "string"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if schema, ok := responseSchemas[rt.method+" "+rt.pattern]; ok {
			ok200 := op["responses"].(map[string]any)["200"].(map[string]any)
			ok200["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
		}
		if rt.method == http.MethodPost || rt.method == http.MethodPatch || rt.method == http.MethodPut {
			op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{
				"schema": map[string]string{"type": "object"}}}}
		}
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":   "hookinbox operator API",
			"version": "1",
			"description": "The operator API of hookinbox, on the internal listener (HOOKINBOX_CONSOLE_ADDR). " +
				"Authenticate with Authorization: Bearer <token> (hookinbox tokens create --role R --name N). " +
				"Roles: viewer < operator < admin; each operation names its least role in x-hookinbox-role. " +
				"Every change of state is audited under the token's name (GET /api/audit). " +
				"Secrets and API keys are never returned, only fingerprints; payloads only with payload=true and the operator role.",
		},
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]string{"type": "http", "scheme": "bearer"}},
			"schemas":         componentSchemas,
		},
		"paths": paths,
	}
}

// responseSchemas describe the answers whose fields are easy to misread
// (units, deprecated fields), by "METHOD pattern". Durations are seconds
// with the unit in the name, times RFC 3339.
var responseSchemas = map[string]any{
	"GET /api/status": ref("Status"),
	"GET /api/trends": ref("Trends"),
}

func ref(name string) map[string]string {
	return map[string]string{"$ref": "#/components/schemas/" + name}
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

var componentSchemas = map[string]any{
	"Status": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"database":  prop("string", `"ok", or why the database could not be read`),
			"temporal":  prop("string", `"ok", or why Temporal could not be reached`),
			"backlog":   ref("Backlog"),
			"routes":    map[string]any{"type": "array", "items": ref("RouteBacklog")},
			"schedules": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			"warnings":  map[string]any{"type": "array", "items": map[string]string{"type": "string"}},
		},
	},
	"Backlog": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pending":                      prop("integer", "inbox rows pending"),
			"oldest_pending_age_seconds":   prop("number", "seconds since the oldest pending row became pending (accepted, or replayed); 0 when none"),
			"oldest_pending_age":           deprecated("integer", "the same age in nanoseconds (a Go time.Duration). Deprecated: read oldest_pending_age_seconds; kept for one release, the next one removes it"),
			"exhausted":                    prop("integer", "inbox rows whose retry budget is spent"),
			"failed":                       prop("integer", "inbox rows that failed permanently"),
			"quarantine_open":              prop("integer", "open quarantine entries"),
			"outbox":                       map[string]any{"type": "object", "description": "outbox rows by status", "additionalProperties": map[string]string{"type": "integer"}},
			"divergences_24h":              prop("integer", "reconciliation divergences found in the last 24 hours"),
			"same_version_divergences_24h": prop("integer", "of them, at the same provider version"),
		},
	},
	"Trends": map[string]any{
		"type":        "object",
		"description": "The overview's trends over the window (query window=1h, by minute, the default; or 24h, by 15 minutes), sampled by the sweeper every HOOKINBOX_SWEEP_INTERVAL",
		"properties": map[string]any{
			"window":         prop("string", `"1h" or "24h"`),
			"bucket_seconds": prop("integer", "each point's span: 60 or 900"),
			"from":           map[string]any{"type": "string", "format": "date-time", "description": "the first point's start"},
			"to":             map[string]any{"type": "string", "format": "date-time", "description": "the last point's end (its bucket holds the current minute)"},
			"points":         map[string]any{"type": "array", "items": ref("TrendPoint")},
		},
	},
	"TrendPoint": map[string]any{
		"type":        "object",
		"description": "One bucket, oldest first. A level is the highest sample of the bucket, null when the sweeper sampled none (a gap)",
		"properties": map[string]any{
			"at":                 map[string]any{"type": "string", "format": "date-time", "description": "the bucket's start"},
			"pending":            nullable("integer", "inbox rows pending"),
			"handled_per_minute": nullable("number", "inbox rows that reached a final status (done, ignored, failed, exhausted), per minute of the bucket; null when no minute of it is recorded"),
			"exhausted":          nullable("integer", "inbox rows exhausted"),
			"failed":             nullable("integer", "inbox rows failed"),
			"quarantine_open":    nullable("integer", "open quarantine entries"),
			"outbox_unsent":      nullable("integer", "outbox rows pending or uncertain (still to send)"),
			"outbox_held":        nullable("integer", "outbox rows held for review"),
			"outbox_failed":      nullable("integer", "outbox rows failed"),
		},
	},
	"RouteBacklog": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"route":                      prop("string", "the forward route"),
			"pending":                    prop("integer", "its pending inbox rows"),
			"oldest_pending_age_seconds": prop("number", "the age of its oldest pending row in seconds (0: none)"),
		},
	},
}

func nullable(typ, desc string) map[string]any {
	return map[string]any{"type": typ, "description": desc, "nullable": true}
}

func deprecated(typ, desc string) map[string]any {
	return map[string]any{"type": typ, "description": desc, "deprecated": true}
}

var errorContent = map[string]any{"application/json": map[string]any{"schema": map[string]any{
	"type": "object", "properties": map[string]any{"error": map[string]string{"type": "string"}}}}}

func orPublic(role string) string {
	if role == "" {
		return "public"
	}
	return role
}

func (s *Server) apiOpenAPI(w http.ResponseWriter, _ *http.Request, _ *principal) error {
	writeJSON(w, http.StatusOK, s.openAPI())
	return nil
}
