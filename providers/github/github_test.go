package github_test

import (
	"github.com/hookinbox/hookinbox/hookintype"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/github"
)

// TestGitHubsDocumentedVector: GitHub's "Validating webhook deliveries"
// (docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries,
// "Testing the webhook payload validation"): secret "It's a Secret to
// Everybody", payload "Hello, World!", X-Hub-Signature-256
// sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17.
func TestGitHubsDocumentedVector(t *testing.T) {
	t.Parallel()
	const (
		secret = "It's a Secret to Everybody"
		body   = "Hello, World!"
		want   = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	)
	v := github.Provider{}.Verifier([]hookintype.Secret{{ID: 1, Value: "another secret of at least 24 bytes"}, {ID: 2, Value: secret}})
	h := http.Header{"Content-Type": {"application/json"}, "X-Hub-Signature-256": {want}}
	got, err := v.Verify(h, []byte(body), 5*time.Minute, time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 2, got.SecretID)
	require.Equal(t, body, string(got.Payload))

	// What Sign makes is the documented signature, beside the SHA-1 one
	// GitHub still sends, and Verify accepts it.
	signed := http.Header{"Content-Type": {"application/json"}}
	require.NoError(t, github.Provider{}.Sign(secret, signed, []byte(body), time.Time{}))
	require.Equal(t, want, signed.Get("X-Hub-Signature-256"))
	require.Equal(t, "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", signed.Get("X-Hub-Signature"))
	got, err = v.Verify(signed, []byte(body), 5*time.Minute, time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 2, got.SecretID)

	var unauth *providers.Unauthenticated
	for name, tt := range map[string]struct{ sig, body string }{
		"another body":           {want, "Hello, World?"},
		"one digit off":          {"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18", body},
		"the SHA-1 scheme alone": {"sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", body},
	} {
		h := http.Header{"Content-Type": {"application/json"}, "X-Hub-Signature-256": {tt.sig}}
		_, err := v.Verify(h, []byte(tt.body), 5*time.Minute, time.Now())
		require.ErrorAs(t, err, &unauth, name)
	}
}
