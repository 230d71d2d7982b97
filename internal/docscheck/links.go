package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	// mdLink is an inline Markdown link or image: group 1 its target.
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// atxHeading is a Markdown heading line; group 1 its text.
	atxHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// slugDrop is what GitHub drops from a heading's text to make its anchor.
	slugDrop = regexp.MustCompile(`[^\p{L}\p{M}\p{N}\s_-]`)
	// linkText is a link in a heading, whose anchor keeps its text only.
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Anchors returns the anchors GitHub gives the headings of doc: the
// heading's text lowercased, punctuation other than - and _ dropped, each
// space a -, and a repeated anchor suffixed -1, -2, …. Headings in fenced
// blocks are not headings.
func Anchors(doc []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		m := atxHeading.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		text := strings.ReplaceAll(m[1], "`", "")
		text = linkText.ReplaceAllString(text, "$1")
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// CheckLinks returns one problem per relative link of the Markdown file
// at path (a file of the tree under root) whose target is not there, or
// whose #anchor is no heading of the Markdown file it points at. Links to
// other schemes (https:, mailto:) and links inside code spans and fenced
// blocks are not checked.
func CheckLinks(root, path string) ([]Problem, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	fence := false
	for i, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, ":") && !strings.HasPrefix(target, "#") {
				continue // https:, mailto:, javascript: (a sample of hostile input)
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
				if file[0] == '/' {
					dest = filepath.Join(root, filepath.FromSlash(file))
				}
			}
			p := func(why string) { problems = append(problems, Problem{Line: i + 1, Text: shorten(line), Why: why}) }
			if rel, err := filepath.Rel(root, dest); err != nil || !filepath.IsLocal(rel) {
				p(fmt.Sprintf("links to %s, outside the tree", target))
				continue
			}
			st, err := os.Stat(dest) //nolint:gosec // G703: dest is inside root, checked above
			if err != nil {
				p(fmt.Sprintf("links to %s, which is not in the tree", target))
				continue
			}
			if anchor == "" || st.IsDir() || !strings.HasSuffix(dest, ".md") {
				continue
			}
			other, err := os.ReadFile(dest) //nolint:gosec // G703: dest is inside root, checked above
			if err != nil {
				return nil, err
			}
			if !Anchors(other)[strings.ToLower(anchor)] {
				p(fmt.Sprintf("links to #%s, which is no heading of %s", anchor, filepath.Base(dest)))
			}
		}
	}
	return problems, nil
}
