package docscheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
)

var (
	goIndexOnce sync.Once
	goIndex     *docscheck.GoIndex
	goIndexErr  error
)

// index parses the module once for the tests of this file.
func index(t *testing.T) *docscheck.GoIndex {
	t.Helper()
	goIndexOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOROOT", "GOMODCACHE").Output()
		if err != nil {
			goIndexErr = err
			return
		}
		env := strings.Fields(string(out))
		goIndex, goIndexErr = docscheck.NewGoIndex(root(t), env[0], env[1])
	})
	require.NoError(t, goIndexErr)
	return goIndex
}

// docFiles are the documents whose names are checked: README.md, every
// docs/*.md and CHANGELOG.md's current release.
func docFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root(t), "docs", "*.md"))
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, f := range append(files, filepath.Join(root(t), "README.md"), filepath.Join(root(t), "CHANGELOG.md")) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root(t), f)
		if rel == "CHANGELOG.md" {
			b = docscheck.CurrentRelease(b)
		}
		out[filepath.ToSlash(rel)] = b
	}
	return out
}

// TestEveryGoNameInTheDocsExists: every Go identifier and every path of the
// tree the docs write as code is there (see docscheck.GoIndex.CheckGoNames).
func TestEveryGoNameInTheDocsExists(t *testing.T) {
	t.Parallel()
	idx := index(t)
	var bad []string
	for name, doc := range docFiles(t) {
		for _, p := range idx.CheckGoNames(doc, name == "CHANGELOG.md") {
			bad = append(bad, name+": "+p.String())
		}
	}
	slices.Sort(bad)
	require.Empty(t, bad, "\n%s", strings.Join(bad, "\n"))
}

// TestTheGoNameCheckTellsNamesThatExistFromOnesThatDoNot: on the real
// module, each shape of name passes when it is there and fails when it is
// not; what is not a name of the module is not checked.
func TestTheGoNameCheckTellsNamesThatExistFromOnesThatDoNot(t *testing.T) {
	t.Parallel()
	idx := index(t)
	for _, span := range []string{
		"hookinbox.WithProvider", "hookinbox.Permanent(err)", "domains.New()",
		"providers.Normalized.Reply",          // a type's field
		"hookinbox.App.Handle",                // a type's method
		"hookintest.Stack",                    // a package outside internal/
		"Event.Fetch", "Projection.TieColumn", // Type.Member, the package unsaid
		"app.Handle", "app.Main()", // app: an *hookinbox.App, or internal/app
		"webhook.ValidatePayloadWithTolerance", // stripe-go's webhook, not ours
		"webhook.Server",                       // ours
		"schema.Tables",                        // three packages called schema
		"internal/store", "providers/github", "lab/soak/soak_test.go", "internal/notify.Decide",
		"github.com/hookinbox/hookinbox/hookintype",
		// Not the module's names: not checked.
		"ev.Fetch", "time.Nope", "config.yml", "api.github.com", "providers/<name>/<name>_test.go",
		"domains/…", "lab/...", "provisioning/migrations/0001_accounts.sql", "claim.First == false",
	} {
		require.Empty(t, idx.GoName(span), span)
	}
	for span, want := range map[string]string{
		"store.Secret":              "no package store (internal/store) declares Secret",
		"hookinbox.NoSuch":          "no package hookinbox (.) declares NoSuch",
		"providers.Normalized.Nope": "no package providers (providers) declares Normalized.Nope",
		"Event.Nope":                "no type Event in the module or a package it imports has Nope",
		"webhook.Nope":              "no package webhook (webhook) declares Nope",
		"internal/catalog":          "there is no internal/catalog in the repository",
		"internal/notify.Nope":      "package internal/notify declares no Nope",
		"internal/catalog.Entry":    "there is no package internal/catalog in the module",
		"github.com/hookinbox/hookinbox/internal/catalog": "there is no internal/catalog in the repository",
	} {
		require.Contains(t, idx.GoName(span), want, span)
	}
}

// TestTheGoNameCheckReadsSpansAndGoBlocks: names are taken from code spans
// and ```go blocks (not from other blocks), with their lines; a name a Go
// block declares is its own; in a changelog, a sentence saying a name went
// away is not checked.
func TestTheGoNameCheckReadsSpansAndGoBlocks(t *testing.T) {
	t.Parallel()
	idx := index(t)
	doc := "# Doc\n\n" +
		"Use `hookinbox.WithProvider` and `store.Secret`.\n" + // 3
		"```go\n" +
		"app := hookinbox.New()\n" + // 5: app is the block's
		"app.Nope()\n" +
		"var s store.EndpointSettings // a comment: store.Nope\n" + // 7
		"fmt.Println(\"store.Nope\")\n" +
		"```\n" +
		"```text\n" +
		"store.Nope in a text block\n" +
		"```\n" +
		"- `hookinbox.EventKey` is gone. `hookinbox.Nothing` was added.\n" // 13
	got := func(changelog bool) []string {
		var out []string
		for _, p := range idx.CheckGoNames([]byte(doc), changelog) {
			out = append(out, p.String())
		}
		return out
	}
	require.Equal(t, []string{
		`line 3: store.Secret: no package store (internal/store) declares Secret: "store.Secret"`,
		`line 7: store.EndpointSettings: no package store (internal/store) declares EndpointSettings: "store.EndpointSettings"`,
		`line 13: hookinbox.EventKey: no package hookinbox (.) declares EventKey: "hookinbox.EventKey"`,
		`line 13: hookinbox.Nothing: no package hookinbox (.) declares Nothing: "hookinbox.Nothing"`,
	}, got(false))
	require.Equal(t, []string{
		`line 3: store.Secret: no package store (internal/store) declares Secret: "store.Secret"`,
		`line 7: store.EndpointSettings: no package store (internal/store) declares EndpointSettings: "store.EndpointSettings"`,
		`line 13: hookinbox.Nothing: no package hookinbox (.) declares Nothing: "hookinbox.Nothing"`,
	}, got(true))
}

// TestTheGoNameCheckFailsOnTheRealGuideWithPlantedNames: docs/adding-a-provider.md
// with its Go block's hookintype.Secret back to the store.Secret it once
// said, or a path back to internal/catalog, fails there, and only there.
func TestTheGoNameCheckFailsOnTheRealGuideWithPlantedNames(t *testing.T) {
	t.Parallel()
	idx := index(t)
	doc := string(readRepo(t, "docs/adding-a-provider.md"))
	require.Empty(t, idx.CheckGoNames([]byte(doc), false))
	for _, plant := range []struct{ old, new, want string }{
		{"func (Provider) Verifier(secrets []hookintype.Secret)", "func (Provider) Verifier(secrets []store.Secret)", "store.Secret: no package store (internal/store) declares Secret"},
		{"`internal/samples` has a body", "`internal/catalog` has a body", "internal/catalog: there is no internal/catalog in the repository"},
	} {
		require.Equal(t, 1, strings.Count(doc, plant.old), plant.old)
		got := idx.CheckGoNames([]byte(strings.Replace(doc, plant.old, plant.new, 1)), false)
		require.Len(t, got, 1, "%v", got)
		require.Contains(t, got[0].Why, plant.want)
	}
}
