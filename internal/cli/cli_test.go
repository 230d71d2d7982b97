package cli_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/cli"
)

func TestOutputFormatAcceptsTableOrJSON(t *testing.T) {
	t.Parallel()
	var o cli.OutputFormat
	require.NoError(t, o.Set("json"))
	require.Equal(t, "json", o.String())
	require.Error(t, o.Set("yaml"))
	require.Equal(t, "json", o.String(), "a rejected value leaves the flag as it was")
}

func TestRenderWritesATableOrTheValue(t *testing.T) {
	t.Parallel()
	var table, js bytes.Buffer
	rows := [][]string{{"evt_1", "done"}, {"evt_long_id", "pending"}}
	require.NoError(t, cli.Render(&table, "table", nil, []string{"EVENT", "STATUS"}, rows))
	require.Equal(t, "EVENT        STATUS\nevt_1        done\nevt_long_id  pending\n", table.String())
	require.NoError(t, cli.Render(&js, "json", map[string]int{"n": 1}, nil, nil))
	require.Equal(t, "{\n  \"n\": 1\n}\n", js.String())
}

func TestUsagefIsAUsageError(t *testing.T) {
	t.Parallel()
	err := cli.Usagef("--since: %q is not an age", "x")
	var ue cli.UsageError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, `--since: "x" is not an age`, err.Error())
}
