package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
)

// A same-version divergence (seed 004: investigate) is counted apart and
// needs attention; without one there is no such warning.
func TestStatusWarnsOfSameVersionDivergences(t *testing.T) {
	t.Parallel()
	s := &Service{}
	v := StatusView{Database: "ok", Temporal: "unavailable: test",
		Backlog: &keys.Backlog{Outbox: map[string]int64{}, Divergences24h: 3, SameVersionDivergences24h: 1}}
	w := s.statusWarnings(v)
	require.Contains(t, w[len(w)-1], "1 same-version divergence(s) in 24h")

	v.Backlog.SameVersionDivergences24h = 0
	for _, w := range s.statusWarnings(v) {
		require.NotContains(t, w, "same-version")
	}
}

// A schedule the configuration keeps but Temporal lacks is reported; one
// the configuration turns off is not expected.
func TestStatusWarnsOfMissingSchedulesTheConfigurationKeeps(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.BackfillInterval = 0
	s := &Service{Config: cfg}
	v := StatusView{Database: "ok", Temporal: "ok", Schedules: []ScheduleView{{ID: "hookinbox-sweeper"}, {ID: "hookinbox-retention", Paused: true}}}
	require.Equal(t, []string{
		"schedule hookinbox-retention is paused",
		"schedule hookinbox-reconcile-subscriptions does not exist: start a worker or run 'hookinbox schedules apply'",
		"schedule hookinbox-recover-github does not exist: start a worker or run 'hookinbox schedules apply'",
		"schedule hookinbox-notify does not exist: start a worker or run 'hookinbox schedules apply'",
	}, s.statusWarnings(v))
}
