package command

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// TestStatusShowsSameVersionDivergences: a same-version divergence (seed
// 004: investigate) is shown apart from the others.
func TestStatusShowsSameVersionDivergences(t *testing.T) {
	t.Parallel()
	v := ops.StatusView{Database: "ok", Temporal: "unavailable: test",
		Backlog:  &keys.Backlog{Outbox: map[string]int64{}, Divergences24h: 3, SameVersionDivergences24h: 1},
		Warnings: []string{"1 same-version divergence(s) in 24h"}}
	var out bytes.Buffer
	printStatus(&out, v)
	require.Contains(t, out.String(), "3 (1 at the same provider version: investigate)")
	require.Contains(t, out.String(), "needs attention:\n  - 1 same-version divergence(s) in 24h")
}
