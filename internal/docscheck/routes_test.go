package docscheck_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/console"
	"github.com/hookinbox/hookinbox/internal/docscheck"
)

// servedRoutes are the API routes the console's router serves, each with
// its least role, as its own /api/openapi.json says (it is made from the
// same route list the router registers).
func servedRoutes(t *testing.T) []docscheck.Route {
	t.Helper()
	s, err := console.New(console.Options{})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var doc struct {
		Paths map[string]map[string]struct {
			Role string `json:"x-hookinbox-role"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	var out []docscheck.Route
	for path, ops := range doc.Paths {
		for method, op := range ops {
			out = append(out, docscheck.Route{Method: strings.ToUpper(method), Path: path, Role: op.Role})
		}
	}
	require.Greater(t, len(out), 30)
	return out
}

// TestEveryConsoleRouteIsDocumentedWithItsRole: docs/console.md's route
// table lists exactly the API routes the console serves, each with the
// least role the router enforces.
func TestEveryConsoleRouteIsDocumentedWithItsRole(t *testing.T) {
	t.Parallel()
	served := servedRoutes(t)
	doc := readRepo(t, "docs/console.md")
	documented, err := docscheck.RouteTableRoutes(doc, "## API")
	require.NoError(t, err)
	require.Empty(t, docscheck.CheckRoutes(served, documented))

	// Planted in a copy: an unknown route and a wrong role each fail.
	planted := strings.Replace(string(doc), "| `GET /api/audit?actor=&action=&limit=` | viewer |", "| `GET /api/audits?actor=&action=&limit=` | viewer |", 1)
	planted = strings.Replace(planted, "| `POST /api/outbox/{id}/release` `{reason}` | operator |", "| `POST /api/outbox/{id}/release` `{reason}` | viewer |", 1)
	documented, err = docscheck.RouteTableRoutes([]byte(planted), "## API")
	require.NoError(t, err)
	require.Equal(t, []string{
		"GET /api/audit (viewer) is served but not in the route table",
		"GET /api/audits is documented, but the console does not serve it",
		"POST /api/outbox/{id}/release is documented for viewer, but the console's least role for it is operator",
	}, docscheck.CheckRoutes(served, documented))
}
