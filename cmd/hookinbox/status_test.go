package main

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/store"
)

// TestStatusShowsSameVersionDivergences: a same-version divergence (seed
// 004: investigate) is counted apart and needs attention.
func TestStatusShowsSameVersionDivergences(t *testing.T) {
	t.Parallel()
	v := statusView{Database: "ok", Temporal: "unavailable: test",
		Backlog: &store.Backlog{Outbox: map[string]int64{}, Divergences24h: 3, SameVersionDivergences24h: 1}}
	v.Warnings = statusWarnings(config.Config{}, v)
	require.Contains(t, v.Warnings[len(v.Warnings)-1], "1 same-version divergence(s) in 24h")
	cmd := &cobra.Command{}
	var out bytes.Buffer
	cmd.SetOut(&out)
	printStatus(cmd, v)
	require.Contains(t, out.String(), "3 (1 at the same provider version: investigate)")

	v.Backlog.SameVersionDivergences24h = 0
	for _, w := range statusWarnings(config.Config{}, v) {
		require.NotContains(t, w, "same-version")
	}
}
