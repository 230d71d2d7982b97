package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
)

// postDoc sends doc to the service over HTTP under its operation key, as
// the forward sender does, and returns the answer's status.
func postDoc(t *testing.T, url string, doc forward.Document) int {
	t.Helper()
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", doc.OperationKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func subDoc(key, sub string, version int64, covers ...string) forward.Document {
	d := forward.Document{OperationKey: key, EventKey: key, Resource: forward.DocResource{Kind: "subscription", ID: sub},
		Current: json.RawMessage(fmt.Sprintf(`{"id":%q,"object":"subscription","version":%d}`, sub, version))}
	if len(covers) > 0 {
		d.EventKey = covers[len(covers)-1]
		for _, c := range covers {
			d.Coalesced = append(d.Coalesced, forwards.Covered{EventKey: c, EventType: "customer.subscription.updated", ReceivedAt: time.Now()})
		}
	}
	return d
}

// The coalescing design's check is what makes its figure worth having: a
// run whose receiver did not end at each resource's latest state, applied
// an event twice or missed one, or saw a state go back, is refused.
func TestForwardServiceCheckRefusesAStaleFinalStateADoubleApplyAndAMissingEvent(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, docs ...forward.Document) *forwardService {
		svc := newForwardService(time.Millisecond)
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		for _, d := range docs {
			require.Equal(t, http.StatusOK, postDoc(t, srv.URL, d))
		}
		return svc
	}
	latest := map[string]int64{"sub_a": 5, "sub_b": 3}

	t.Run("a correct run passes", func(t *testing.T) {
		svc := run(t,
			subDoc("e1", "sub_a", 2),
			subDoc("k-a", "sub_a", 5, "e2", "e3", "e4"),
			subDoc("k-b", "sub_b", 3, "e5", "e6"),
			subDoc("k-b", "sub_b", 3, "e5", "e6"), // a resend of one key: deduped, not applied again
		)
		require.NoError(t, svc.check(6, latest))
		st := svc.stats()
		require.Equal(t, forwardStats{requests: 4, docs: 3, coalesced: 2, redelivered: 1}, st)
		require.NoError(t, svc.check(6, nil), "without a source, coverage alone")
	})
	t.Run("a resource that ends before its latest state", func(t *testing.T) {
		svc := run(t, subDoc("e1", "sub_a", 2), subDoc("k-a", "sub_a", 4, "e2", "e3", "e4"), subDoc("k-b", "sub_b", 3, "e5", "e6"))
		err := svc.check(6, latest)
		require.ErrorContains(t, err, "sub_a: ended at version 4, the latest is 5")
		require.NoError(t, svc.check(6, nil), "the stale state is what only the source's latest shows")
	})
	t.Run("an event covered by two documents", func(t *testing.T) {
		svc := run(t, subDoc("k-a1", "sub_a", 3, "e1", "e2"), subDoc("k-a2", "sub_a", 5, "e2", "e3", "e4"), subDoc("k-b", "sub_b", 3, "e5", "e6"))
		require.ErrorContains(t, svc.check(6, latest), "1 events applied more than once, e.g. e2 (2 times)")
	})
	t.Run("an event never applied", func(t *testing.T) {
		svc := run(t, subDoc("k-a", "sub_a", 5, "e1", "e2", "e3", "e4"), subDoc("e5", "sub_b", 3))
		require.ErrorContains(t, svc.check(6, latest), "applied 5 of 6 events")
	})
	t.Run("a state that goes back", func(t *testing.T) {
		svc := run(t, subDoc("k-a", "sub_a", 4, "e1", "e2"), subDoc("e3", "sub_a", 3), subDoc("k-a2", "sub_a", 5, "e4"),
			subDoc("k-b", "sub_b", 3, "e5", "e6"))
		require.ErrorContains(t, svc.check(6, latest), "sub_a: state went back from version 4 to 3")
	})
	t.Run("a document without the current object", func(t *testing.T) {
		d := subDoc("e1", "sub_a", 5)
		d.Current = nil
		svc := run(t, d, subDoc("k-a", "sub_a", 5, "e2", "e3", "e4"), subDoc("k-b", "sub_b", 3, "e5", "e6"))
		require.ErrorContains(t, svc.check(6, latest), "sub_a: document 1 had no current version")
	})
}

// A document under another key than its own is refused (400) and fails
// the check.
func TestForwardServiceRefusesAKeyThatIsNotTheDocuments(t *testing.T) {
	t.Parallel()
	svc := newForwardService(0)
	srv := httptest.NewServer(svc)
	defer srv.Close()
	d := subDoc("e1", "sub_a", 1)
	body, err := json.Marshal(d)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "another")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.ErrorContains(t, svc.check(1, nil), `Idempotency-Key "another" is not the document's operation key "e1"`)
}
