package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/cli"
)

// execute runs the lab binary's commands as main would.
func execute(args ...string) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return root.ExecuteContext(context.Background())
}

func TestLabCommandUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"simulate with a bad lose mode", []string{"simulate", "--email-lose-mode", "drop", "--listen", "127.0.0.1:0"}},
		{"simulate with accounts but no Connect", []string{"simulate", "--accounts", "a,b", "--listen", "127.0.0.1:0"}},
		{"simulate with a GitHub hook that is no hook", []string{"simulate", "--github-slug", "gh", "--github-hook", "acme", "--listen", "127.0.0.1:0"}},
		{"simulate with a GitHub repository hook without a name", []string{"simulate", "--github-slug", "gh", "--github-hook", "repo:acme", "--listen", "127.0.0.1:0"}},
		{"simulate dropping more GitHub deliveries than it makes", []string{"simulate", "--github-slug", "gh", "--github-deliveries", "2", "--github-drops", "2", "--github-lose-answers", "1", "--listen", "127.0.0.1:0"}},
		{"bench with an unknown suite", []string{"bench", "--suite", "intake,fast"}},
		{"bench with a bad burst", []string{"bench", "--burst", "50"}},
		{"bench with an unknown design", []string{"bench", "--designs", "naive,clever"}},
		{"soak without a service binary", []string{"soak", "--binary", filepath.Join(t.TempDir(), "hookinbox")}},
	}
	for _, tt := range tests {
		err := execute(tt.args...)
		var ue cli.UsageError
		require.ErrorAs(t, err, &ue, tt.name)
	}
}

func TestTheLabHasTheHarnessCommandsOnly(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range newRootCmd().Commands() {
		names = append(names, c.Name())
	}
	require.Subset(t, names, []string{"simulate", "soak", "bench", "demo"})
	require.NotContains(t, names, "webhook")
	require.NotContains(t, names, "worker")
}

func TestServiceBinaryIsTheGivenExecutable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hookinbox")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o600))
	_, err := serviceBinary(bin)
	require.ErrorAs(t, err, new(cli.UsageError), "not executable")
	require.NoError(t, os.Chmod(bin, 0o755))
	got, err := serviceBinary(bin)
	require.NoError(t, err)
	require.Equal(t, bin, got)
	_, err = serviceBinary(dir)
	require.Error(t, err, "a folder is not a binary")
}
