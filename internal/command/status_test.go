package command

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// TestStatusShowsSameVersionDivergencesApart: a same-version divergence
// (seed 004: investigate) is shown beside the day's count, and only when
// there is one.
func TestStatusShowsSameVersionDivergencesApart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		same int64
		want string
	}{
		{"one at the same version", 1, "3 (1 at the same provider version: investigate)\n"},
		{"none at the same version", 0, "3\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := ops.StatusView{Database: "ok", Temporal: "ok",
				Backlog: &keys.Backlog{Outbox: map[string]int64{}, Divergences24h: 3, SameVersionDivergences24h: tt.same}}
			var out bytes.Buffer
			printStatus(&out, v)
			line := lineStarting(t, out.String(), "divergences (24h)")
			require.True(t, strings.HasSuffix(line, tt.want), "%q", line)
		})
	}
}

// TestStatusListsTheWarningsTheServiceRaises: what ops.Service.Status finds
// wrong (here: no database and no Temporal, for reasons the test knows) is
// printed under "needs attention", one line each, and "healthy" only when
// it finds nothing.
func TestStatusListsTheWarningsTheServiceRaises(t *testing.T) {
	t.Parallel()
	svc := &ops.Service{StoreErr: errors.New("dial tcp 127.0.0.1:5432: connection refused"),
		TemporalErr: errors.New("context deadline exceeded")}
	v := svc.Status(context.Background())
	var out bytes.Buffer
	printStatus(&out, v)
	_, attention, ok := strings.Cut(out.String(), "\nneeds attention:\n")
	require.True(t, ok, out.String())
	require.Equal(t, "  - database: unavailable: dial tcp 127.0.0.1:5432: connection refused\n"+
		"  - temporal: unavailable: context deadline exceeded (the intake still accepts; hand-offs wait for the sweeper)\n", attention)
	require.NotContains(t, out.String(), "healthy")

	out.Reset()
	printStatus(&out, ops.StatusView{Database: "ok", Temporal: "ok", Backlog: &keys.Backlog{Outbox: map[string]int64{}}})
	require.True(t, strings.HasSuffix(out.String(), "\nhealthy\n"), out.String())
	require.NotContains(t, out.String(), "needs attention")
}

// lineStarting returns the line of out that starts with prefix.
func lineStarting(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.SplitAfter(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starts with %q in:\n%s", prefix, out)
	return ""
}
