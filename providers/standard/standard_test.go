package standard_test

import (
	"github.com/hookinbox/hookinbox/hookintype"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/standard"
)

// The published Standard Webhooks test vector, from the specification's
// reference libraries: standard-webhooks/standard-webhooks,
// libraries/go/webhook_test.go (TestWebhookSign; the same values in
// libraries/javascript/src/webhook.test.ts and
// libraries/python/tests/test_webhooks.py).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func headers(id, ts, sig string) http.Header {
	return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
}

func TestThePublishedVectorVerifies(t *testing.T) {
	t.Parallel()
	at := time.Unix(vectorTimestamp, 0)
	v := standard.Provider{}.Verifier([]hookintype.Secret{{ID: 3, Value: "whsec_" + strings.Repeat("A", 32)}, {ID: 4, Value: vectorSecret}})
	tests := []struct {
		name string
		h    http.Header
		body string
		now  time.Time
		ok   bool
	}{
		{"the vector", headers(vectorID, "1614265330", vectorSignature), vectorBody, at, true},
		{"the vector beside another signature (a rotation)", headers(vectorID, "1614265330", "v1,bm9wZQ== "+vectorSignature), vectorBody, at.Add(4 * time.Minute), true},
		{"another body", headers(vectorID, "1614265330", vectorSignature), `{"test": 2432232315}`, at, false},
		{"another id", headers("msg_p5jXN8AQM9LWM0D4loKWxJel", "1614265330", vectorSignature), vectorBody, at, false},
		{"another timestamp", headers(vectorID, "1614265331", vectorSignature), vectorBody, at, false},
		{"one bit off", headers(vectorID, "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="), vectorBody, at, false},
		{"outside the tolerance", headers(vectorID, "1614265330", vectorSignature), vectorBody, at.Add(6 * time.Minute), false},
	}
	t.Run("what Sign makes is the vector", func(t *testing.T) {
		t.Parallel()
		h := http.Header{"Webhook-Id": {vectorID}}
		require.NoError(t, standard.Provider{}.Sign(vectorSecret, h, []byte(vectorBody), at))
		require.Equal(t, "1614265330", h.Get("Webhook-Timestamp"))
		require.Equal(t, vectorSignature, h.Get("Webhook-Signature"))
		got, err := v.Verify(h, []byte(vectorBody), 5*time.Minute, at)
		require.NoError(t, err)
		require.EqualValues(t, 4, got.SecretID)

		require.ErrorContains(t, standard.Provider{}.Sign(vectorSecret, http.Header{}, []byte(vectorBody), at), "webhook-id",
			"the id is signed: without one there is nothing to sign")
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := v.Verify(tt.h, []byte(tt.body), 5*time.Minute, tt.now)
			if !tt.ok {
				var unauth *providers.Unauthenticated
				require.ErrorAs(t, err, &unauth)
				return
			}
			require.NoError(t, err)
			require.EqualValues(t, 4, got.SecretID, "the secret that matched")
			require.Equal(t, vectorBody, string(got.Payload))
		})
	}
}
