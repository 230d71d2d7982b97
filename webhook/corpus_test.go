package webhook_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/hookinbox/hookinbox/providers/providertest"
)

// octokitExample is one payload of @octokit/webhooks-examples: the event
// (X-GitHub-Event) and the body GitHub sends, compacted as GitHub sends it.
type octokitExample struct {
	source string // e.g. api.github.com/issues#3
	event  string
	body   []byte
}

// loadOctokit reads every <dir>/index.json of the package: one entry per
// event, each with its example payloads.
func loadOctokit(t *testing.T, dir string) map[string][]octokitExample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "index.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no index.json under %s", dir)
	out := map[string][]octokitExample{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var events []struct {
			Name     string            `json:"name"`
			Examples []json.RawMessage `json:"examples"`
		}
		require.NoError(t, json.Unmarshal(raw, &events), f)
		site := filepath.Base(filepath.Dir(f))
		for _, e := range events {
			require.NotEmpty(t, e.Name, f)
			for i, ex := range e.Examples {
				var b bytes.Buffer
				require.NoError(t, json.Compact(&b, ex))
				out[site] = append(out[site], octokitExample{source: fmt.Sprintf("%s/%s#%d", site, e.Name, i), event: e.Name, body: b.Bytes()})
			}
		}
	}
	return out
}

// githubAccount is the source account GitHub's deliveries name, as
// docs/providers.md states the rule: the installation, else the
// organization, else the repository's owner; "" is the endpoint's own.
func githubAccount(body []byte) string {
	doc := gjson.ParseBytes(body)
	for _, path := range []string{"installation.id", "organization.login", "repository.owner.login"} {
		if v := doc.Get(path); v.Exists() {
			return v.String()
		}
	}
	return ""
}

// TestEveryOctokitExamplePayloadIsAdmittedOnce sends every payload of
// @octokit/webhooks-examples (GitHub's own examples, for github.com and
// each GitHub Enterprise Server release), signed as GitHub signs
// (X-Hub-Signature-256, X-GitHub-Event, X-GitHub-Delivery with a fresh id
// each), through the HTTP intake into PostgreSQL. With every account it
// names linked, each is answered 200, none is quarantined or refused, and
// each distinct body is stored exactly once: GitHub signs no delivery id,
// so a body the endpoint already holds is a replay (a duplicate) whatever
// its new id.
func TestEveryOctokitExamplePayloadIsAdmittedOnce(t *testing.T) {
	t.Parallel()
	corpus := loadOctokit(t, testenv.NPMPackage(t, devenv.OctokitWebhooks))
	require.NotEmpty(t, corpus["api.github.com"], "the github.com examples")
	b := setup(t)
	const secret = "octokit-corpus-secret-0123456789abcdef"
	require.NoError(t, endpoints.InsertEndpoint(b.ctx, b.store, endpoints.NewEndpoint{Slug: "gh-corpus", Provider: "github",
		Environment: "live", Account: "corpus-own", Secrets: []string{secret}}))
	accounts := map[string]bool{"corpus-own": true}
	sites := make([]string, 0, len(corpus))
	for site, examples := range corpus {
		sites = append(sites, site)
		for _, ex := range examples {
			if a := githubAccount(ex.body); a != "" {
				accounts[a] = true
			}
		}
	}
	sort.Strings(sites)
	for a := range accounts {
		require.NoError(t, endpoints.LinkAccount(b.ctx, b.store, "gh-corpus", a, "ws_corpus"))
	}

	type stored struct{ eventType, source string }
	first := map[[32]byte]stored{} // by body hash: the first delivery of each distinct body
	sent, duplicates := 0, 0
	for _, site := range sites {
		for _, ex := range corpus[site] {
			delivery := fmt.Sprintf("%08x-0000-4000-8000-%012x", sent, len(ex.body))
			h := providertest.GitHubHeaders(ex.body, secret, delivery, ex.event)
			r := b.post(t, "gh-corpus", ex.body, h)
			sent++
			require.Equal(t, http.StatusOK, r.code, "%s: %s", ex.source, r.body)
			var ans struct {
				Status string `json:"status"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.body), &ans), ex.source)
			sum := sha256.Sum256(ex.body)
			want := ex.event
			if a := gjson.GetBytes(ex.body, "action"); a.Type == gjson.String && a.Str != "" {
				want += "." + a.Str
			}
			if _, seen := first[sum]; seen {
				duplicates++
				require.Equal(t, "duplicate", ans.Status, "%s: the same body again is a replay", ex.source)
				continue
			}
			require.Contains(t, []string{"accepted", "ignored"}, ans.Status, "%s: %s", ex.source, r.body)
			first[sum] = stored{eventType: want, source: ex.source}
		}
	}
	t.Logf("octokit @%s: %d payloads sent (%s), %d distinct bodies, %d replays of a body already held",
		versionOf(t), sent, perSite(corpus, sites), len(first), duplicates)

	require.Empty(t, b.quarantine(t), "no payload is quarantined")
	rows, err := b.store.Pool.Query(b.ctx, `SELECT body_sha256, event_type, workspace_id, source_account, count(*) OVER (PARTITION BY body_sha256)
		FROM webhook_inbox WHERE endpoint_slug = 'gh-corpus'`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var sum []byte
		var typ, ws, acct string
		var copies int
		require.NoError(t, rows.Scan(&sum, &typ, &ws, &acct, &copies))
		n++
		var key [32]byte
		copy(key[:], sum)
		s, ok := first[key]
		require.True(t, ok, "a stored body that was never sent first: %s", hex.EncodeToString(sum))
		require.Equal(t, 1, copies, "%s stored once", s.source)
		require.Equal(t, s.eventType, typ, s.source)
		require.Equal(t, "ws_corpus", ws, s.source)
		require.True(t, accounts[acct], "%s: account %q", s.source, acct)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(first), n, "each distinct body stored exactly once")

	// A redelivery (same delivery id, same body) is a duplicate too.
	ex := corpus["api.github.com"][0]
	r := b.post(t, "gh-corpus", ex.body, providertest.GitHubHeaders(ex.body, secret, fmt.Sprintf("%08x-0000-4000-8000-%012x", 0, len(ex.body)), ex.event))
	require.Equal(t, http.StatusOK, r.code)
	require.Contains(t, r.body, `"duplicate"`)
	// And a forged one is refused.
	r = b.post(t, "gh-corpus", ex.body, providertest.GitHubHeaders(ex.body, "not-the-secret", "forged-1", ex.event))
	require.Equal(t, http.StatusUnauthorized, r.code)
	var total int
	require.NoError(t, b.store.Pool.QueryRow(b.ctx, `SELECT count(*) FROM webhook_inbox WHERE endpoint_slug = 'gh-corpus'`).Scan(&total))
	require.Equal(t, len(first), total)
}

func perSite(corpus map[string][]octokitExample, sites []string) string {
	parts := make([]string, 0, len(sites))
	for _, s := range sites {
		parts = append(parts, fmt.Sprintf("%s %d", s, len(corpus[s])))
	}
	return strings.Join(parts, ", ")
}

// versionOf is the pinned version, for the log.
func versionOf(t *testing.T) string {
	v, err := devenv.OctokitWebhooks.Version(testenv.Root(t))
	require.NoError(t, err)
	return v
}
