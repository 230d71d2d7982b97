package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/secretbox"
)

func ring(t *testing.T, keys ...secretbox.Key) *secretbox.Keyring {
	t.Helper()
	k, err := secretbox.New(keys...)
	require.NoError(t, err)
	return k
}

func key(id string, fill byte) secretbox.Key {
	return secretbox.Key{ID: id, Secret: bytes.Repeat([]byte{fill}, secretbox.KeySize)}
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	k := ring(t, key("a", 1))
	sealed, id, err := k.Seal([]byte("whsec_the-secret"), "endpoint_secrets/ep")
	require.NoError(t, err)
	require.Equal(t, "a", id)
	require.NotContains(t, string(sealed), "the-secret")
	got, err := k.Open(sealed, id, "endpoint_secrets/ep")
	require.NoError(t, err)
	require.Equal(t, "whsec_the-secret", string(got))

	// A fresh data key and nonces each time: sealing twice differs.
	again, _, err := k.Seal([]byte("whsec_the-secret"), "endpoint_secrets/ep")
	require.NoError(t, err)
	require.NotEqual(t, sealed, again)
}

// The attack: open a value with the wrong key, under the wrong key id, in
// another row, or after tampering. Each fails with a clear error and never
// yields bytes.
func TestWrongKeyNeverGarbage(t *testing.T) {
	t.Parallel()
	right := ring(t, key("a", 1))
	sealed, id, err := right.Seal([]byte("sk_live_value"), "endpoints.api_key/ep")
	require.NoError(t, err)

	wrongSameID := ring(t, key("a", 2))
	got, err := wrongSameID.Open(sealed, id, "endpoints.api_key/ep")
	require.ErrorIs(t, err, secretbox.ErrCannotOpen)
	require.Nil(t, got)
	require.Contains(t, err.Error(), `key id "a"`)

	other := ring(t, key("b", 1))
	_, err = other.Open(sealed, id, "endpoints.api_key/ep")
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.Contains(t, err.Error(), "the keyring holds b")

	// Same key bytes, but the stored key id says another key: the wrapping
	// is bound to the id.
	renamed := ring(t, key("b", 1), key("a", 9))
	_, err = renamed.Open(sealed, "b", "endpoints.api_key/ep")
	require.ErrorIs(t, err, secretbox.ErrCannotOpen)

	_, err = right.Open(sealed, id, "endpoints.api_key/other-endpoint")
	require.ErrorIs(t, err, secretbox.ErrCannotOpen, "a value copied into another row does not open")

	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x40
		got, err := right.Open(bad, id, "endpoints.api_key/ep")
		require.Error(t, err, "byte %d flipped", i)
		require.Nil(t, got)
	}
	_, err = right.Open(sealed[:10], id, "endpoints.api_key/ep")
	require.ErrorIs(t, err, secretbox.ErrCannotOpen)
}

func TestOlderKeysOpenOnly(t *testing.T) {
	t.Parallel()
	old := ring(t, key("old", 1))
	sealed, id, err := old.Seal([]byte("v"), "c")
	require.NoError(t, err)
	rotated := ring(t, key("new", 2), key("old", 1))
	require.Equal(t, "new", rotated.CurrentID())
	got, err := rotated.Open(sealed, id, "c")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	_, nid, err := rotated.Seal([]byte("v"), "c")
	require.NoError(t, err)
	require.Equal(t, "new", nid)
	require.NotEqual(t, old.Fingerprint("p", "v"), rotated.Fingerprint("p", "v"), "the fingerprint key follows the current key")
	require.Equal(t, old.Fingerprint("p", "v"), ring(t, key("x", 1)).Fingerprint("p", "v"))
	require.NotEqual(t, old.Fingerprint("p", "v"), old.Fingerprint("q", "v"))
}

func TestParseKeyAndFile(t *testing.T) {
	t.Parallel()
	b64 := secretbox.GenerateKey()
	k, err := secretbox.ParseKey(b64)
	require.NoError(t, err)
	raw, _ := base64.StdEncoding.DecodeString(b64)
	require.Equal(t, secretbox.DerivedID(raw), k.CurrentID())
	k2, err := secretbox.ParseKey(b64)
	require.NoError(t, err)
	require.Equal(t, k.CurrentID(), k2.CurrentID(), "a bare key always has the same id")

	_, err = secretbox.ParseKey("")
	require.Error(t, err)
	// A rejected key is still secret material (often a real key with one
	// character lost or added): the error names the problem, never the key
	// nor a readable part of it.
	almost := b64[:len(b64)-2] // one byte short of a valid key
	for _, bad := range []string{
		"%%sk_live_do_not_echo_this_value%%", // not base64
		base64.StdEncoding.EncodeToString([]byte("short key material")),
		almost,
		b64 + "!",
		base64.StdEncoding.EncodeToString(append(raw, raw...)), // 64 bytes
	} {
		_, err := secretbox.ParseKey(bad)
		require.Error(t, err, bad)
		requireNoPartOf(t, err.Error(), bad)
	}

	file := "# hookinbox secrets keys\n" + secretbox.GenerateKeyLine("k2026") + "\n\n" + secretbox.GenerateKeyLine("k2025") + "\n"
	kf, err := secretbox.ParseKeyFile([]byte(file))
	require.NoError(t, err)
	require.Equal(t, "k2026", kf.CurrentID())
	require.Equal(t, []string{"k2026", "k2025"}, kf.IDs())

	for name, bad := range map[string]string{
		"no colon":     "abc\n",
		"dup id":       secretbox.GenerateKeyLine("a") + "\n" + secretbox.GenerateKeyLine("a"),
		"bad id":       secretbox.GenerateKeyLine("a b"),
		"empty":        "# nothing\n",
		"short key":    "a:" + base64.StdEncoding.EncodeToString([]byte("x")),
		"almost a key": "k2026:" + almost,
		"not base64":   "k2026:" + b64 + "!",
	} {
		_, err := secretbox.ParseKeyFile([]byte(bad))
		require.Error(t, err, name)
		if _, key, ok := strings.Cut(strings.TrimSpace(bad), ":"); ok && len(key) > 8 {
			requireNoPartOf(t, err.Error(), key)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	_, err := secretbox.Load("", "")
	require.ErrorIs(t, err, secretbox.ErrNoKey)
	require.Contains(t, err.Error(), "HOOKINBOX_SECRETS_KEY")

	path := filepath.Join(t.TempDir(), "secrets.key")
	require.NoError(t, os.WriteFile(path, []byte(secretbox.GenerateKeyLine("local")+"\n"), 0o600))
	k, err := secretbox.Load("", path)
	require.NoError(t, err)
	require.Equal(t, "local", k.CurrentID())

	_, err = secretbox.Load(secretbox.GenerateKey(), path)
	require.ErrorContains(t, err, "not both")
	_, err = secretbox.Load("", filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "HOOKINBOX_SECRETS_KEY_FILE")

	line := secretbox.GenerateKeyLine("x")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(line, ":", ";", 1)), 0o600))
	_, err = secretbox.Load("", path)
	require.ErrorContains(t, err, "line 1")
	require.NotContains(t, err.Error(), line[2:], "the key is never echoed")
}

// requireNoPartOf fails when msg holds secret, or any 8 consecutive
// characters of it (a quoted prefix or suffix is a leak too).
func requireNoPartOf(t *testing.T, msg, secret string) {
	t.Helper()
	const window = 8
	if len(secret) < window {
		require.NotContains(t, msg, secret)
		return
	}
	for i := 0; i+window <= len(secret); i++ {
		require.NotContains(t, msg, secret[i:i+window], "the error echoes part of the key %q", secret)
	}
}
