package docscheck_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/docscheck"
)

// linkedDocs are the Markdown files a newcomer reads: the README, docs/,
// the CHANGELOG and each example's README.
func linkedDocs(t *testing.T) []string {
	t.Helper()
	r := root(t)
	files, err := filepath.Glob(filepath.Join(r, "docs", "*.md"))
	require.NoError(t, err)
	examples, err := filepath.Glob(filepath.Join(r, "examples", "*", "README.md"))
	require.NoError(t, err)
	files = append(files, examples...)
	return append(files, filepath.Join(r, "README.md"), filepath.Join(r, "CHANGELOG.md"))
}

// TestEveryRelativeLinkResolves: every relative link and #anchor of the
// README, docs/, the CHANGELOG and the examples' READMEs names a file of
// the tree and, for a Markdown file, one of its headings.
func TestEveryRelativeLinkResolves(t *testing.T) {
	t.Parallel()
	for _, f := range linkedDocs(t) {
		problems, err := docscheck.CheckLinks(root(t), f)
		require.NoError(t, err)
		require.Empty(t, problems, f)
	}
}

// TestTheLinkCheckReportsABrokenLink plants a missing file, a missing
// anchor in another file and one in the same file, and a link out of the
// tree (never opened), in a copy, beside links
// that hold (a repeated heading's -1, a heading with code and
// punctuation, a directory, a link in a code span, an https link).
func TestTheLinkCheckReportsABrokenLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs", "img"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "other.md"),
		[]byte("# Other\n## The `inbox`: what, why?\n## Steps\n## Steps\n```sh\n# not a heading\n```\n"), 0o644))
	doc := "# Guide\n## Try it\n" +
		"Good: [a](other.md#the-inbox-what-why), [b](other.md#steps-1), [c](#try-it), [d](img), [e](https://example.com/x#y).\n" +
		"Code: `[x](missing.md)`.\n" +
		"Bad: [f](missing.md), [g](other.md#not-a-heading), [h](#no-such-section), [i](../../etc/passwd).\n"
	path := filepath.Join(dir, "docs", "guide.md")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	problems, err := docscheck.CheckLinks(dir, path)
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, p.Why)
	}
	require.Equal(t, []string{
		"links to missing.md, which is not in the tree",
		"links to #not-a-heading, which is no heading of other.md",
		"links to #no-such-section, which is no heading of guide.md",
		"links to ../../etc/passwd, outside the tree",
	}, got)
}
