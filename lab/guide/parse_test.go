package guide

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const sample = "# Title\n" +
	"\n" +
	"## 1. Start\n" +
	"\n" +
	"```sh\n" +
	"B=x\n" +
	"echo $B\n" +
	"```\n" +
	"\n" +
	"```json\n" +
	"{\"not\": \"run\"}\n" +
	"```\n" +
	"\n" +
	"### Deeper\n" +
	"<!-- guide: skip reason=\"production-only host\" -->\n" +
	"\n" +
	"```bash\n" +
	"curl https://prod.example.com\n" +
	"```\n" +
	"\n" +
	"## 2. Run it\n" +
	"\n" +
	"<!-- guide: background until=\"is up$\" ready=\"http://127.0.0.1:1/a http://127.0.0.1:1/b\" timeout=90s reason=\"runs until Ctrl-C\" -->\n" +
	"````sh\n" +
	"make run\n" +
	"```\n" +
	"still inside\n" +
	"````\n" +
	"  <!-- guide: run timeout=5m -->\n" +
	"  ```sh\n" +
	"  go test ./...\n" +
	"  ```\n"

func TestParseFindsTheShellBlocksTheirHeadingsAndMarkers(t *testing.T) {
	g, err := Parse("docs/x.md", sample)
	require.NoError(t, err)
	require.Len(t, g.Blocks, 4)

	b := g.Blocks[0]
	require.Equal(t, "docs/x.md:5", b.Where())
	require.Equal(t, []string{"Title", "1. Start"}, b.Headings)
	require.Equal(t, "B=x\necho $B\n", b.Text)
	require.Equal(t, Run, b.Marker.Kind)
	require.Zero(t, b.Marker.Line)

	b = g.Blocks[1]
	require.Equal(t, 17, b.Line)
	require.Equal(t, "bash", b.Lang)
	require.Equal(t, []string{"Title", "1. Start", "Deeper"}, b.Headings)
	require.Equal(t, Skip, b.Marker.Kind)
	require.Equal(t, "production-only host", b.Marker.Reason)
	require.Equal(t, 15, b.Marker.Line)

	b = g.Blocks[2]
	require.Equal(t, []string{"Title", "2. Run it"}, b.Headings, "a level-2 heading closes the level-3 one")
	require.Equal(t, Background, b.Marker.Kind)
	require.True(t, b.Marker.InBackground())
	require.Equal(t, "(?m)is up$", b.Marker.Until.String())
	require.Equal(t, []string{"http://127.0.0.1:1/a", "http://127.0.0.1:1/b"}, b.Marker.Ready)
	require.Equal(t, 90*time.Second, b.Marker.Timeout)
	require.Equal(t, "make run\n```\nstill inside\n", b.Text, "a longer fence holds a shorter one")

	b = g.Blocks[3]
	require.Equal(t, Run, b.Marker.Kind)
	require.Equal(t, 5*time.Minute, b.Marker.Timeout)
	require.Equal(t, "  go test ./...\n", b.Text)

	require.Len(t, g.Under("1. Start"), 2)
	require.Len(t, g.Under("Deeper"), 1)
	require.Len(t, g.Under("2. *"), 2)
	require.Empty(t, g.Under("3. Nothing"))
}

func TestParseFailsOnAMarkerItCannotRead(t *testing.T) {
	for name, md := range map[string]string{
		"unknown kind":             "<!-- guide: sometimes reason=\"x\" -->\n```sh\necho\n```\n",
		"unknown attribute":        "<!-- guide: skip reason=\"x\" because=\"y\" -->\n```sh\necho\n```\n",
		"attribute of another":     "<!-- guide: skip reason=\"x\" until=\"y\" -->\n```sh\necho\n```\n",
		"skip without reason":      "<!-- guide: skip -->\n```sh\necho\n```\n",
		"background without until": "<!-- guide: background reason=\"x\" -->\n```sh\necho\n```\n",
		"bad timeout":              "<!-- guide: run timeout=soon -->\n```sh\necho\n```\n",
		"bad regexp":               "<!-- guide: background until=\"(\" reason=\"x\" -->\n```sh\necho\n```\n",
		"bad ready":                "<!-- guide: background ready=\"localhost:1\" reason=\"x\" -->\n```sh\necho\n```\n",
		"unclosed quote":           "<!-- guide: skip reason=\"x -->\n```sh\necho\n```\n",
		"twice":                    "<!-- guide: skip reason=\"x\" reason=\"y\" -->\n```sh\necho\n```\n",
		"not alone on its line":    "Text <!-- guide: skip reason=\"x\" -->\n```sh\necho\n```\n",
		"half in a code span":      "`x` <!-- guide: skip -->\n```sh\necho\n```\n",
		"no space":                 "<!--guide skip -->\n```sh\necho\n```\n",
		"text between":             "<!-- guide: skip reason=\"x\" -->\nSome text.\n```sh\necho\n```\n",
		"before a json block":      "<!-- guide: skip reason=\"x\" -->\n```json\n{}\n```\n",
		"at the end":               "```sh\necho\n```\n<!-- guide: skip reason=\"x\" -->\n",
		"two in a row":             "<!-- guide: skip reason=\"x\" -->\n<!-- guide: skip reason=\"y\" -->\n```sh\necho\n```\n",
		"line marker":              "```sh\necho a\nsleep 100   # guide: background\n```\n",
		"unclosed fence":           "```sh\necho a\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("x.md", md)
			require.Error(t, err)
			require.Contains(t, err.Error(), "x.md:")
			t.Log(err)
		})
	}
}

// Every marker in the repository's docs reads, whether or not a test runs
// that guide: a typo in one fails here.
func TestEveryMarkerInTheDocsParses(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md"))
	markers := 0
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		g, err := ParseFile(f, filepath.ToSlash(rel))
		require.NoError(t, err)
		for _, b := range g.Blocks {
			if b.Marker.Line > 0 {
				markers++
			}
		}
	}
	_, err = os.Stat(filepath.Join(root, "docs", "write-your-own-handler.md"))
	require.NoError(t, err)
	t.Logf("%d files, %d markers", len(files), markers)
}

// Prose may show the syntax in a code span: that is not a marker.
func TestAMarkerShownInACodeSpanIsProse(t *testing.T) {
	g, err := Parse("x.md", "A comment before a block (`<!-- guide: … -->`) says why.\n\n```sh\necho\n```\n")
	require.NoError(t, err)
	require.Len(t, g.Blocks, 1)
	require.Equal(t, Run, g.Blocks[0].Marker.Kind)
}
