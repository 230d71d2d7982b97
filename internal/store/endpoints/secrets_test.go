package endpoints_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// Values registered by the tests below, each of which must never appear in
// the database as it is.
var registered = map[string]string{
	"stripe signing secret":    "whsec_PLAINstripeSigningSecret0123456789abc",
	"rotated signing secret":   "whsec_PLAINrotatedSigningSecret0123456789ab",
	"provider API key":         "sk_live_PLAINproviderApiKey0123456789abcdef",
	"destination secret":       "whsec_UExBSU5kZXN0aW5hdGlvblNlY3JldDAxMjM0NTY=",
	"legacy plain secret":      "whsec_PLAINlegacySigningSecret0123456789abcd",
	"legacy plain API key":     "sk_live_PLAINlegacyApiKey0123456789abcdefgh",
	"legacy destination":       "whsec_UExBSU5sZWdhY3lEZXN0aW5hdGlvbjAxMjM0NTY=",
	"shopify secret, by accts": "shpss_0123456789abcdef0123456789abcdef",
	"forward route secret":     "whsec_UExBSU5mb3J3YXJkUm91dGVTZWNyZXQwMTIzNDU=",
}

// register puts every kind of secret in s: through the store (sealed at
// once) and, as a database from before sealing would hold them, straight
// into the plain columns.
func register(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: "stripe", Provider: "stripe", Environment: "live",
		Secrets: []string{registered["stripe signing secret"], registered["rotated signing secret"]},
		APIKey:  registered["provider API key"], APIBaseURL: "https://api.stripe.com"}))
	require.NoError(t, endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: "shop", Provider: "shopify", Environment: "live",
		Secrets: []string{registered["shopify secret, by accts"]}, SecretAccounts: []string{"a.myshopify.com"}}))
	require.NoError(t, forwards.Insert(ctx, s.Pool, s.Keys, forwards.Route{Name: "billing", Provider: "stripe", EventType: "invoice.paid",
		URL: "https://billing.example.com/hooks", Secret: registered["forward route secret"], Timeout: time.Second, Enabled: true}))
	require.NoError(t, outbox.UpsertDestination(ctx, s.Pool, s.Keys, outbox.Destination{WorkspaceID: "ws_1", Name: "oncall",
		Kind: "webhook", Target: "https://hooks.example.com/x", Secret: registered["destination secret"], Enabled: true}))
	_, err := s.Pool.Exec(ctx, `
		INSERT INTO endpoints (slug, provider, environment, api_key) VALUES ('legacy', 'stripe', 'test', $1);
		`, registered["legacy plain API key"])
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `INSERT INTO endpoint_secrets (endpoint_slug, secret) VALUES ('legacy', $1)`, registered["legacy plain secret"])
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `INSERT INTO team_destinations (workspace_id, name, kind, target, secret)
		VALUES ('ws_1', 'legacy', 'webhook', 'https://hooks.example.com/y', $1)`, registered["legacy destination"])
	require.NoError(t, err)
}

// pgDump finds pg_dump where lab/devenv finds the server it dumps, so that
// it is of the server's version. Without one the test is skipped, except
// under CI=true, where it fails: docs/security.md cites this test as the
// proof that a dump holds no secret, and a proof that did not run is none.
func pgDump(t *testing.T) string {
	t.Helper()
	p, err := devenv.PostgresBinary("pg_dump")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pg_dump (CI=true: a test that cannot run fails): %v", err)
		}
		t.Skipf("no pg_dump: %v", err)
	}
	return p
}

func pgDumpOf(t *testing.T, bin, dbURL string) []byte {
	t.Helper()
	out, err := exec.Command(bin, "--no-owner", "--dbname="+dbURL).Output()
	require.NoError(t, err, "pg_dump")
	require.Contains(t, string(out), "COPY public.endpoint_secrets", "the dump holds the secrets table")
	return out
}

// requireNoneOf asserts no registered value appears in b, neither as text
// nor hex-encoded (as bytea dumps).
func requireNoneOf(t *testing.T, b []byte, values map[string]string) {
	t.Helper()
	for what, v := range values {
		require.False(t, bytes.Contains(b, []byte(v)), "the %s appears in the dump", what)
		require.False(t, bytes.Contains(b, []byte(hex.EncodeToString([]byte(v)))), "the %s appears hex-encoded in the dump", what)
	}
}

// The attack: take a pg_dump (a backup, a replica, a read-only leak) of a
// database where endpoints, API keys and destination secrets were
// registered. Once sealed, it contains none of them, and nothing was lost.
func TestPgDumpHoldsNoRegisteredSecret(t *testing.T) {
	t.Parallel()
	dump := pgDump(t)
	dbURL := testenv.DatabaseURL(t)
	s, err := store.Open(context.Background(), dbURL, 4)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	s.Keys = testenv.Keys(t)
	ctx := context.Background()
	register(t, s)

	before := pgDumpOf(t, dump, dbURL)
	require.True(t, bytes.Contains(before, []byte(registered["legacy plain secret"])),
		"the legacy rows are plain before sealing: the check can fail")

	n, err := endpoints.PlaintextSecrets(ctx, s)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	counts, err := endpoints.SealPlaintext(ctx, s)
	require.NoError(t, err)
	for _, c := range counts {
		want := 1 // one legacy plain value of each kind
		if c.Column == "forward_routes.secret" {
			want = 0 // sealed from the start: there is no plain column
		}
		require.Equal(t, want, c.Sealed, c.Column)
		require.Zero(t, c.Rekeyed, c.Column)
	}
	n, err = endpoints.PlaintextSecrets(ctx, s)
	require.NoError(t, err)
	require.Zero(t, n)

	requireNoneOf(t, pgDumpOf(t, dump, dbURL), registered)

	// Never lose a secret: every value opens back to what was registered.
	ep, err := endpoints.GetEndpoint(ctx, s, "stripe")
	require.NoError(t, err)
	require.Equal(t, registered["provider API key"], ep.APIKey)
	fr, err := forwards.Open(ctx, s, "billing")
	require.NoError(t, err)
	require.Equal(t, registered["forward route secret"], fr.Secret, "a forward route's secret opens under the new key alone")
	require.Equal(t, registered["stripe signing secret"], ep.Secrets[0].Value)
	require.Equal(t, registered["rotated signing secret"], ep.Secrets[1].Value)
	legacy, err := endpoints.GetEndpoint(ctx, s, "legacy")
	require.NoError(t, err)
	require.Equal(t, registered["legacy plain API key"], legacy.APIKey)
	require.Equal(t, registered["legacy plain secret"], legacy.Secrets[0].Value)
	shop, err := endpoints.GetIntakeEndpoint(ctx, s, "shop")
	require.NoError(t, err)
	require.Equal(t, []string{"a.myshopify.com"}, shop.Secrets[0].Accounts)
	ds, err := outbox.ListDestinations(ctx, s.Pool, "ws_1", false)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	for _, d := range ds {
		require.True(t, d.Signed)
		require.Empty(t, d.Secret, "listing leaves the secret sealed")
		v, err := outbox.DestinationSecret(s, d)
		require.NoError(t, err)
		want := map[string]string{"oncall": registered["destination secret"], "legacy": registered["legacy destination"]}[d.Name]
		require.Equal(t, want, v)
	}

	// Sealing again finds nothing to do.
	counts, err = endpoints.SealPlaintext(ctx, s)
	require.NoError(t, err)
	for _, c := range counts {
		require.Zero(t, c.Sealed+c.Rekeyed, c.Column)
	}
}

// The attack: run with the wrong key (or none). Every read fails with an
// error naming the problem; no read ever returns bytes that are not the
// secret.
func TestWrongKeyIsAClearErrorNeverGarbage(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	register(t, s)

	other, err := secretbox.ParseKey(secretbox.GenerateKey())
	require.NoError(t, err)
	wrong := &store.Store{Pool: s.Pool, Keys: other}
	_, err = endpoints.GetEndpoint(ctx, wrong, "stripe")
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.ErrorContains(t, err, `endpoint "stripe"`)
	require.ErrorContains(t, err, s.Keys.CurrentID())

	sameID, err := secretbox.New(secretbox.Key{ID: s.Keys.CurrentID(), Secret: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	_, err = endpoints.GetIntakeEndpoint(ctx, (&store.Store{Pool: s.Pool, Keys: sameID}), "stripe")
	require.ErrorIs(t, err, secretbox.ErrCannotOpen)

	none := &store.Store{Pool: s.Pool}
	_, err = endpoints.GetEndpoint(ctx, none, "stripe")
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	require.ErrorContains(t, err, "HOOKINBOX_SECRETS_KEY")
	require.ErrorIs(t, endpoints.InsertEndpoint(ctx, none, endpoints.NewEndpoint{Slug: "x", Provider: "stripe", Environment: "test",
		Secrets: []string{"whsec_x"}}), secretbox.ErrNoKey, "no key: nothing is stored in plain text")
	_, err = endpoints.GetEndpoint(ctx, none, "x")
	require.ErrorIs(t, err, fault.ErrNotFound)

	// A sealed value moved to another row does not open there.
	_, err = s.Pool.Exec(ctx, `UPDATE endpoints SET api_key_sealed = (SELECT api_key_sealed FROM endpoints WHERE slug = 'stripe'),
		api_key_key_id = (SELECT api_key_key_id FROM endpoints WHERE slug = 'stripe') WHERE slug = 'shop'`)
	require.NoError(t, err)
	_, err = endpoints.GetEndpoint(ctx, s, "shop")
	require.ErrorIs(t, err, secretbox.ErrCannotOpen)
}

// Rotation: with the new key first and the old one below it, Reseal
// re-encrypts everything; run again it does nothing; afterwards the new key
// alone opens everything and a re-added secret is still the same row.
func TestResealRotatesEveryValueIdempotently(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	old, err := secretbox.New(secretbox.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)})
	require.NoError(t, err)
	s.Keys = old
	register(t, s)
	_, err = endpoints.SealPlaintext(ctx, s)
	require.NoError(t, err)

	newKey := bytes.Repeat([]byte{2}, 32)
	s.Keys, err = secretbox.New(secretbox.Key{ID: "k2", Secret: newKey}, secretbox.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)})
	require.NoError(t, err)
	counts, err := endpoints.Reseal(ctx, s)
	require.NoError(t, err)
	want := map[string]int{"endpoint_secrets.secret": 4, "endpoints.api_key": 2, "team_destinations.secret": 2, "forward_routes.secret": 1}
	for _, c := range counts {
		require.Equal(t, want[c.Column], c.Rekeyed, c.Column)
		require.Zero(t, c.Sealed, c.Column)
	}
	counts, err = endpoints.Reseal(ctx, s)
	require.NoError(t, err)
	for _, c := range counts {
		require.Zero(t, c.Rekeyed+c.Sealed, "a second pass finds nothing: %s", c.Column)
	}
	status, err := endpoints.SecretStatus(ctx, s)
	require.NoError(t, err)
	for _, c := range status {
		require.Equal(t, "k2", c.KeyID, c.Column)
	}

	s.Keys, err = secretbox.New(secretbox.Key{ID: "k2", Secret: newKey})
	require.NoError(t, err)
	ep, err := endpoints.GetEndpoint(ctx, s, "stripe")
	require.NoError(t, err)
	require.Equal(t, registered["provider API key"], ep.APIKey)
	id, err := endpoints.InsertSecret(ctx, s.Pool, s.Keys, "stripe", registered["stripe signing secret"], nil)
	require.NoError(t, err)
	require.Equal(t, ep.Secrets[0].ID, id, "the fingerprint followed the key: the same secret is the same row")

	// A value under a key the ring no longer holds stops the pass, loudly.
	s.Keys, err = secretbox.New(secretbox.Key{ID: "k3", Secret: bytes.Repeat([]byte{3}, 32)})
	require.NoError(t, err)
	_, err = endpoints.Reseal(ctx, s)
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.ErrorContains(t, err, `"k2"`)
}

// The intake's query for an endpoint reads no API key column: run as the
// intake's own role (store.Grants: no api_key, api_key_sealed nor
// api_key_key_id), it works and opens the sealed signing secrets, while the
// full query is refused; the worker's role opens the sealed API key and never
// reads a signing secret.
func TestIntakeEndpointQueryNeverReadsTheAPIKey(t *testing.T) {
	t.Parallel()
	dbURL := testenv.DatabaseURL(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dbURL, 2)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	s.Keys = testenv.Keys(t)
	register(t, s)

	as := func(role string) *store.Store {
		st, err := store.Open(ctx, testenv.RoleURL(t, dbURL, role), 2)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		st.Keys = s.Keys
		return st
	}
	intake := as(store.RoleIntake)
	ep, err := endpoints.GetIntakeEndpoint(ctx, intake, "stripe")
	require.NoError(t, err)
	require.Empty(t, ep.APIKey)
	require.False(t, ep.HasAPIKey)
	require.Equal(t, registered["stripe signing secret"], ep.Secrets[0].Value)
	_, err = endpoints.GetEndpoint(ctx, intake, "stripe")
	require.ErrorContains(t, err, "permission denied", "the full query does read the key: the check can fail")
	for _, col := range []string{"api_key", "api_key_sealed", "api_key_key_id"} {
		_, err := intake.Pool.Exec(ctx, `SELECT `+col+` FROM endpoints`)
		require.ErrorContains(t, err, "permission denied", col)
	}

	worker := as(store.RoleWorker)
	pep, err := endpoints.GetProviderEndpoint(ctx, worker, "stripe")
	require.NoError(t, err)
	require.NotEmpty(t, pep.APIKey)
	require.Empty(t, pep.Secrets)
	_, err = worker.Pool.Exec(ctx, `SELECT secret_sealed FROM endpoint_secrets`)
	require.ErrorContains(t, err, "permission denied")
}

// Display fingerprints are written with each value, keyed, and the values
// stored before they were kept get theirs from FillFingerprints (what
// `hookinbox migrate` runs); a listing then shows them without opening a
// secret, and the key's rotation recomputes them.
func TestDisplayFingerprintsAreKeyedAndFilledForOlderValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	const secret, key = "whsec_FINGERprintedSecret0123456789abcdefg", "sk_live_FINGERprintedKey0123456789"
	require.NoError(t, endpoints.InsertEndpoint(ctx, s, endpoints.NewEndpoint{Slug: "fp", Provider: "stripe", Environment: "test",
		Secrets: []string{secret}, APIKey: key}))
	wantSecret := store.DisplayFingerprint(s.Keys, store.DisplaySecret, secret)
	wantKey := store.DisplayFingerprint(s.Keys, store.DisplayAPIKey, key)
	view := func() *endpoints.Endpoint {
		e, err := endpoints.GetEndpointView(ctx, s, "fp")
		require.NoError(t, err)
		require.Empty(t, e.APIKey, "a view opens no secret")
		require.Empty(t, e.Secrets[0].Value)
		return e
	}
	e := view()
	require.Equal(t, wantKey, e.APIKeyFingerprint)
	require.Equal(t, wantSecret, e.Secrets[0].Fingerprint)
	require.True(t, e.HasAPIKey)

	_, err := s.Pool.Exec(ctx, `UPDATE endpoints SET api_key_fingerprint = NULL`)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE endpoint_secrets SET display_fingerprint = NULL`)
	require.NoError(t, err)
	n, err := endpoints.FillFingerprints(ctx, s)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	e = view()
	require.Equal(t, wantKey, e.APIKeyFingerprint)
	require.Equal(t, wantSecret, e.Secrets[0].Fingerprint)
	n, err = endpoints.FillFingerprints(ctx, s)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to fill")

	rotated, err := secretbox.New(secretbox.Key{ID: "k-new", Secret: bytes.Repeat([]byte{7}, 32)}, secretbox.Key{ID: s.Keys.CurrentID(),
		Secret: keyBytes(t)})
	require.NoError(t, err)
	s.Keys = rotated
	_, err = endpoints.Reseal(ctx, s)
	require.NoError(t, err)
	e = view()
	require.Equal(t, store.DisplayFingerprint(rotated, store.DisplayAPIKey, key), e.APIKeyFingerprint)
	require.NotEqual(t, wantKey, e.APIKeyFingerprint, "keyed: another key, another fingerprint")
	require.Equal(t, store.DisplayFingerprint(rotated, store.DisplaySecret, secret), e.Secrets[0].Fingerprint)
}

// keyBytes is the raw test key (testenv.SecretsKey, base64).
func keyBytes(t *testing.T) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(testenv.SecretsKey())
	require.NoError(t, err)
	return b
}
