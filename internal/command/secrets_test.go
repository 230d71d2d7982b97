package command

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// These tests run the commands as an operator does, configured by the
// environment (t.Setenv: they cannot run in parallel).

type cliRun struct {
	out, errOut string
	err         error
}

func runSecretsCLI(t *testing.T, stdin string, args ...string) cliRun {
	t.Helper()
	root := &cobra.Command{Use: "hookinbox", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newEndpointsCmd(), newWorkspacesCmd(), newSecretsCmd(), newMigrateCmd())
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	return cliRun{out.String(), errOut.String(), err}
}

// operatorEnv points the commands at a fresh database with the tests' key
// and returns a store on it.
func operatorEnv(t *testing.T) *store.Store {
	t.Helper()
	dbURL := testenv.DatabaseURL(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("HOOKINBOX_SECRETS_KEY", testenv.SecretsKey())
	t.Setenv("HOOKINBOX_SECRETS_KEY_FILE", "")
	st, err := store.Open(context.Background(), dbURL, 2)
	require.NoError(t, err)
	st.Keys = testenv.Keys(t)
	t.Cleanup(st.Close)
	return st
}

const (
	strongStripe  = "whsec_Hk2oBvwfyqY1Ad5ATpJwQLSYz1f5QS8m"
	strongStripe2 = "whsec_Zq8LmN3pRt6VwXy9Ab2Cd5Ef8Gh1Jk4Mn7"
)

func TestEndpointsAddReadsSecretsFromAFileAnEnvVarOrStdin(t *testing.T) {
	st := operatorEnv(t)
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "stripe.secret")
	require.NoError(t, os.WriteFile(file, []byte(strongStripe+"\n"), 0o600))
	t.Setenv("ROTATED_SECRET", strongStripe2)

	r := runSecretsCLI(t, "sk_live_fromStdin0123456789abcdef\n", "endpoints", "add", "--slug", "s1", "--provider", "stripe",
		"--environment", "live", "--secret-file", file, "--secret-env", "ROTATED_SECRET", "--api-key-stdin",
		"--api-base-url", "https://api.stripe.com", "--secret-accounts", "acct_a, acct_b")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "2 secret(s)")
	require.NotContains(t, r.errOut, "warning", "nothing on argv, no warning")
	ep, err := endpoints.GetEndpoint(ctx, st, "s1")
	require.NoError(t, err)
	require.Equal(t, "sk_live_fromStdin0123456789abcdef", ep.APIKey)
	require.Len(t, ep.Secrets, 2)
	require.Equal(t, strongStripe, ep.Secrets[0].Value)
	require.Equal(t, strongStripe2, ep.Secrets[1].Value)
	require.Equal(t, []string{"acct_a", "acct_b"}, ep.Secrets[0].Accounts)

	// The contract: --secret and --api-key still work, with a warning.
	r = runSecretsCLI(t, "", "endpoints", "add", "--slug", "s2", "--provider", "stripe", "--environment", "test",
		"--secret", strongStripe, "--api-key", "sk_test_onArgv0123456789abcdef", "--api-base-url", "https://api.stripe.com")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.errOut, "warning: --secret puts the secret in the process list")
	require.Contains(t, r.errOut, "warning: --api-key puts the secret")
	ep, err = endpoints.GetEndpoint(ctx, st, "s2")
	require.NoError(t, err)
	require.Equal(t, strongStripe, ep.Secrets[0].Value)

	// Rotation reads the new secret off argv too; binding changes it.
	r = runSecretsCLI(t, strongStripe2+"\n", "endpoints", "secrets", "add", "--slug", "s2", "--secret-stdin", "--secret-accounts", "acct_z")
	require.NoError(t, r.err, r.errOut)
	ep, err = endpoints.GetEndpoint(ctx, st, "s2")
	require.NoError(t, err)
	require.Len(t, ep.Secrets, 2)
	require.Equal(t, []string{"acct_z"}, ep.Secrets[1].Accounts)
	r = runSecretsCLI(t, "", "endpoints", "secrets", "bind", "--slug", "s2", "--id", strconv.FormatInt(ep.Secrets[1].ID, 10), "--any")
	require.NoError(t, r.err, r.errOut)
	ep, err = endpoints.GetEndpoint(ctx, st, "s2")
	require.NoError(t, err)
	require.Empty(t, ep.Secrets[1].Accounts)

	r = runSecretsCLI(t, "", "endpoints", "list", "--output", "json")
	require.NoError(t, r.err)
	require.NotContains(t, r.out, strongStripe)
	require.NotContains(t, r.out, "sk_live_fromStdin")
	require.Contains(t, r.out, `"api_key_set": true`)

	// Both secrets from one stdin cannot be.
	r = runSecretsCLI(t, "x\n", "endpoints", "add", "--slug", "s3", "--provider", "stripe", "--environment", "test",
		"--secret-stdin", "--api-key-stdin")
	require.ErrorAs(t, r.err, new(cli.UsageError))
}

// The attack: register a guessable secret through the CLI. Refused, and
// nothing stored.
func TestWeakSecretsAreRefusedByTheCLIAndNothingIsStored(t *testing.T) {
	st := operatorEnv(t)
	ctx := context.Background()
	for _, args := range [][]string{
		{"endpoints", "add", "--slug", "weak", "--provider", "stripe", "--environment", "test", "--secret", "whsec_"},
		{"endpoints", "add", "--slug", "weak", "--provider", "github", "--environment", "live", "--secret", "gh-secret"},
		{"endpoints", "add", "--slug", "weak", "--provider", "shopify", "--environment", "live", "--secret", "shpss_secret"},
		{"endpoints", "add", "--slug", "weak", "--provider", "stripe", "--environment", "test"},
		{"workspaces", "add-destination", "--workspace", "ws", "--name", "hook", "--webhook", "https://example.com/h", "--secret", "whsec_"},
	} {
		r := runSecretsCLI(t, "", args...)
		require.Error(t, r.err, "%v", args)
	}
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM endpoint_secrets)
		+ (SELECT count(*) FROM team_destinations)`).Scan(&n))
	require.Zero(t, n)

	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "ok", Provider: "stripe", Environment: "test", Secrets: []string{strongStripe}}))
	t.Setenv("WEAK", "whsec_short")
	r := runSecretsCLI(t, "", "endpoints", "secrets", "add", "--slug", "ok", "--secret-env", "WEAK")
	require.Error(t, r.err)
	ep, err := endpoints.GetEndpoint(ctx, st, "ok")
	require.NoError(t, err)
	require.Len(t, ep.Secrets, 1)
}

// migrate seals what an older database kept in plain columns; rotate-key,
// with a new key first in the key file, re-encrypts everything once.
func TestMigrateSealsPlainSecretsAndRotateKeyReencrypts(t *testing.T) {
	st := operatorEnv(t)
	ctx := context.Background()
	_, err := st.Pool.Exec(ctx, `INSERT INTO endpoints (slug, provider, environment, api_key) VALUES ('old', 'stripe', 'test', 'sk_live_plainOld')`)
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO endpoint_secrets (endpoint_slug, secret) VALUES ('old', $1)`, strongStripe)
	require.NoError(t, err)

	// Without a key, migrate says what is left and seals nothing.
	t.Setenv("HOOKINBOX_SECRETS_KEY", "")
	r := runSecretsCLI(t, "", "migrate")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "secrets: 2 still in plain columns")

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secrets.key")
	k1 := secretbox.GenerateKeyLine("k1")
	require.NoError(t, os.WriteFile(keyFile, []byte(k1+"\n"), 0o600))
	t.Setenv("HOOKINBOX_SECRETS_KEY_FILE", keyFile)
	r = runSecretsCLI(t, "", "migrate")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "secrets: 1 plain endpoint_secrets.secret sealed under key k1")
	require.Contains(t, r.out, "secrets: 1 plain endpoints.api_key sealed under key k1")
	var plain int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM endpoints WHERE api_key IS NOT NULL`).Scan(&plain))
	require.Zero(t, plain)

	require.NoError(t, os.WriteFile(keyFile, []byte(secretbox.GenerateKeyLine("k2")+"\n"+k1+"\n"), 0o600))
	r = runSecretsCLI(t, "", "secrets", "rotate-key", "--output", "json")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, `"key_id": "k2"`)
	require.Contains(t, r.out, `"rekeyed": 1`)
	r = runSecretsCLI(t, "", "secrets", "rotate-key")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "every secret is sealed under key k2")
	require.NotContains(t, r.out, " 1 ", "the second pass re-encrypts nothing")
	var passes int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM operator_actions WHERE action = 'secrets_reseal' AND target = 'keyring:k2'`).Scan(&passes))
	require.Equal(t, 2, passes, "each rotate-key pass is audited (through ops)")
	r = runSecretsCLI(t, "", "secrets", "status")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "k2 (current)")
	require.NotContains(t, r.out, "k1")
	require.NotContains(t, r.out, "plain")

	kr, err := secretbox.Load("", keyFile)
	require.NoError(t, err)
	st.Keys = kr
	ep, err := endpoints.GetEndpoint(ctx, st, "old")
	require.NoError(t, err)
	require.Equal(t, "sk_live_plainOld", ep.APIKey)
	require.Equal(t, strongStripe, ep.Secrets[0].Value)
}

// `endpoints set-account` prints what it did as before, and is now
// validated and audited by ops (under the login name: it has no --by).
func TestSetAccountIsValidatedAndAuditedThroughOps(t *testing.T) {
	st := operatorEnv(t)
	ctx := context.Background()
	t.Setenv("USER", "carol")
	require.NoError(t, endpoints.InsertEndpoint(ctx, st, endpoints.NewEndpoint{Slug: "ok", Provider: "stripe", Environment: "test", Secrets: []string{strongStripe}}))

	r := runSecretsCLI(t, "", "endpoints", "set-account", "--slug", "ok", "--account", "acct_x")
	require.NoError(t, r.err, r.errOut)
	require.Equal(t, "endpoint ok: own account acct_x, not linked: its events are quarantined as unknown_account until "+
		"'hookinbox endpoints link --slug ok --account acct_x --workspace W'\n", r.out)
	r = runSecretsCLI(t, "", "endpoints", "set-account", "--slug", "ok", "--account", "acct x")
	require.ErrorAs(t, r.err, new(cli.UsageError))
	r = runSecretsCLI(t, "", "endpoints", "set-account", "--slug", "nope", "--account", "acct_y")
	require.ErrorIs(t, r.err, fault.ErrNotFound)

	ep, err := endpoints.GetEndpoint(ctx, st, "ok")
	require.NoError(t, err)
	require.Equal(t, "acct_x", ep.Account)
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM operator_actions WHERE action = 'endpoint_set_account'
		AND actor = 'carol' AND target = 'endpoint:ok'`).Scan(&n))
	require.Equal(t, 1, n)
}

// The CLI's side of the API base URL rule: a host other than the
// provider's official API needs --allow-custom-api-host (the simulator's
// registration, as simulate prints it), a new base URL the key again.
func TestEndpointsAPIBaseURLNamesItsHostAndTakesTheKeyAgain(t *testing.T) {
	st := operatorEnv(t)
	ctx := context.Background()
	add := []string{"endpoints", "add", "--slug", "sim", "--provider", "stripe", "--environment", "test", "--secret", strongStripe,
		"--api-base-url", "http://127.0.0.1:12111", "--api-key", "sk_test_simulator"}
	r := runSecretsCLI(t, "", add...)
	require.Error(t, r.err)
	require.Contains(t, r.err.Error(), "--allow-custom-api-host")
	r = runSecretsCLI(t, "", append(add, "--allow-custom-api-host")...)
	require.NoError(t, r.err, r.errOut)

	r = runSecretsCLI(t, "", "endpoints", "update", "--slug", "sim", "--api-base-url", "http://127.0.0.1:12112", "--allow-custom-api-host")
	require.Error(t, r.err)
	require.Contains(t, r.err.Error(), "needs its API key again")
	r = runSecretsCLI(t, "", "endpoints", "update", "--slug", "sim", "--api-base-url", "https://api.stripe.com", "--api-key", "sk_test_other0123456789")
	require.NoError(t, r.err, r.errOut)
	ep, err := endpoints.GetEndpoint(ctx, st, "sim")
	require.NoError(t, err)
	require.Equal(t, "https://api.stripe.com", ep.APIBaseURL)
	require.Equal(t, "sk_test_other0123456789", ep.APIKey)
}
