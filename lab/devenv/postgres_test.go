package devenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// PostgresBinary takes a program from the server's directory
// (HOOKINBOX_PG_BIN first), and says where it looked when it is not there.
// Not parallel: it sets the environment.
func TestPostgresBinaryComesFromTheServersDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"postgres", "pg_dump"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "psql"), []byte("not executable"), 0o644))
	t.Setenv("HOOKINBOX_PG_BIN", dir)

	p, err := PostgresBinary("pg_dump")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "pg_dump"), p)

	for _, missing := range []string{"pg_restore", "psql"} {
		_, err = PostgresBinary(missing)
		require.ErrorContains(t, err, missing+" is not in "+dir)
	}
}
