package guide

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Kind says how a block runs.
type Kind string

// The kinds of block (see the package documentation).
const (
	Run             Kind = "run"
	Skip            Kind = "skip"
	Background      Kind = "background"
	AnotherTerminal Kind = "another-terminal"
)

// attrs are the attributes each kind takes.
var attrs = map[Kind][]string{
	Run:             {"timeout", "reason"},
	Skip:            {"reason"},
	Background:      {"reason", "until", "ready", "timeout"},
	AnotherTerminal: {"reason", "until", "ready", "timeout"},
}

// Marker is what a block's marker comment says; a block without one has
// Kind Run and Line 0.
type Marker struct {
	Kind    Kind
	Reason  string
	Until   *regexp.Regexp
	Ready   []string
	Timeout time.Duration // 0: the session's default
	Line    int           // the marker's line, 0 when the block has none
}

// InBackground reports whether the block is started in the background.
func (m Marker) InBackground() bool { return m.Kind == Background || m.Kind == AnotherTerminal }

// Block is one fenced shell block of a guide.
type Block struct {
	File     string   // the file as Parse was given it
	Line     int      // the line of the opening fence (the first line of Text is Line+1)
	Headings []string // the headings it is under, outermost first, without their #s
	Lang     string   // sh, bash or shell
	Text     string   // the body, each line ending in \n
	Marker   Marker
}

// Where is the block's file:line.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Section is the innermost heading the block is under ("" before any).
func (b Block) Section() string {
	if len(b.Headings) == 0 {
		return ""
	}
	return b.Headings[len(b.Headings)-1]
}

// Under reports whether one of the block's headings is heading, or starts
// with it when heading ends in "*".
func (b Block) Under(heading string) bool {
	prefix, isPrefix := strings.CutSuffix(heading, "*")
	for _, h := range b.Headings {
		if h == heading || (isPrefix && strings.HasPrefix(h, prefix)) {
			return true
		}
	}
	return false
}

// Guide is a markdown file's shell blocks, in order.
type Guide struct {
	File   string
	Blocks []Block
}

// Under is the guide's blocks under heading (see Block.Under), in order.
func (g *Guide) Under(heading string) []Block {
	var out []Block
	for _, b := range g.Blocks {
		if b.Under(heading) {
			out = append(out, b)
		}
	}
	return out
}

// ParseFile reads and parses the markdown file at path; blocks name it as
// name (a path relative to the repository, for messages).
func ParseFile(path, name string) (*Guide, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the guide a test names, in the repository
	if err != nil {
		return nil, err
	}
	return Parse(name, string(b))
}

var (
	// markerLine is a marker comment alone on its line.
	markerLine = regexp.MustCompile(`^\s*<!--\s*guide:(.*?)-->\s*$`)
	// markerish is anything that looks like a marker, well formed or not.
	markerish = regexp.MustCompile(`<!--\s*guide\b`)
	// lineMarker is a trailing "# guide:" comment on a line of a block.
	lineMarker = regexp.MustCompile(`(^|\s)#\s*guide:`)
	// codeSpan is an inline code span: prose that shows a marker in one
	// (`<!-- guide: … -->`) is not a marker.
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}
)

// Parse reads the shell blocks of markdown text and their markers. It
// fails on a marker it cannot read (see the package documentation).
func Parse(file, text string) (*Guide, error) {
	g := &Guide{File: file}
	lines := strings.SplitAfter(text, "\n")
	var headings []string
	var pending *Marker // a marker waiting for its block
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		n := i + 1
		trimmed := strings.TrimLeft(line, " \t")
		if fence, info, ok := openingFence(trimmed); ok {
			lang, _, _ := strings.Cut(strings.TrimSpace(info), " ")
			lang = strings.TrimPrefix(lang, "{")
			lang = strings.TrimSuffix(lang, "}")
			var body strings.Builder
			j := i + 1
			closed := false
			for ; j < len(lines); j++ {
				l := strings.TrimRight(lines[j], "\r\n")
				if isClosingFence(strings.TrimLeft(l, " \t"), fence) {
					closed = true
					break
				}
				body.WriteString(l)
				body.WriteString("\n")
			}
			if !closed {
				return nil, fmt.Errorf("%s:%d: a fence that is never closed", file, n)
			}
			shell := shellLangs[lang]
			if pending != nil && !shell {
				return nil, fmt.Errorf("%s:%d: a guide marker before a %q block (only sh, bash and shell blocks run)", file, pending.Line, lang)
			}
			if shell {
				b := Block{File: file, Line: n, Headings: append([]string(nil), headings...), Lang: lang, Text: body.String(),
					Marker: Marker{Kind: Run}}
				if pending != nil {
					b.Marker = *pending
					pending = nil
				}
				for k, l := range strings.Split(strings.TrimSuffix(b.Text, "\n"), "\n") {
					if lineMarker.MatchString(l) {
						return nil, fmt.Errorf("%s:%d: a \"# guide:\" line marker: none exists; put the line in a block of its own with a block marker", file, n+1+k)
					}
				}
				g.Blocks = append(g.Blocks, b)
			}
			i = j
			continue
		}
		if m := markerLine.FindStringSubmatch(line); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a guide marker with no shell block after it (another marker follows at line %d)", file, pending.Line, n)
			}
			mk, err := parseMarker(m[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			mk.Line = n
			pending = &mk
			continue
		}
		if markerish.MatchString(codeSpan.ReplaceAllString(line, "")) {
			return nil, fmt.Errorf("%s:%d: a guide marker must be alone on its line, as <!-- guide: KIND key=value … -->", file, n)
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if pending != nil {
			return nil, fmt.Errorf("%s:%d: a guide marker must be followed by its shell block (blank lines only between); line %d is text", file, pending.Line, n)
		}
		if h := heading.FindStringSubmatch(line); h != nil && line == trimmed {
			level := len(h[1])
			if level <= len(headings) {
				headings = headings[:level-1]
			}
			for len(headings) < level-1 {
				headings = append(headings, "")
			}
			headings = append(headings, h[2])
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a guide marker with no shell block after it", file, pending.Line)
	}
	return g, nil
}

// openingFence reports whether line opens a fenced block, with its fence
// (the run of backticks or tildes) and info string.
func openingFence(line string) (fence, info string, ok bool) {
	for _, c := range []string{"`", "~"} {
		k := 0
		for k < len(line) && line[k] == c[0] {
			k++
		}
		if k >= 3 {
			if c == "`" && strings.Contains(line[k:], "`") {
				return "", "", false // an inline code span, not a fence
			}
			return line[:k], line[k:], true
		}
	}
	return "", "", false
}

func isClosingFence(line, fence string) bool {
	t := strings.TrimRight(line, " \t")
	if len(t) < len(fence) || strings.Trim(t, fence[:1]) != "" {
		return false
	}
	return true
}

// parseMarker reads what follows "guide:" in a marker comment.
func parseMarker(s string) (Marker, error) {
	s = strings.TrimSpace(s)
	kindWord, rest, _ := strings.Cut(s, " ")
	kind := Kind(kindWord)
	allowed, ok := attrs[kind]
	if !ok {
		return Marker{}, fmt.Errorf("unknown guide marker %q (the kinds: run, skip, background, another-terminal)", kindWord)
	}
	m := Marker{Kind: kind}
	seen := map[string]bool{}
	rest = strings.TrimSpace(rest)
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \t\"") {
			return Marker{}, fmt.Errorf("guide marker %s: %q is not key=value", kind, rest)
		}
		var val string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				return Marker{}, fmt.Errorf("guide marker %s: %s's value has no closing quote", kind, key)
			}
			val, rest = after[1:1+end], after[2+end:]
			if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
				return Marker{}, fmt.Errorf("guide marker %s: text right after %s's closing quote", kind, key)
			}
		} else {
			val, rest, _ = strings.Cut(after, " ")
		}
		rest = strings.TrimSpace(rest)
		if !contains(allowed, key) {
			return Marker{}, fmt.Errorf("guide marker %s: unknown attribute %q (it takes %s)", kind, key, strings.Join(allowed, ", "))
		}
		if seen[key] {
			return Marker{}, fmt.Errorf("guide marker %s: %s given twice", kind, key)
		}
		seen[key] = true
		switch key {
		case "reason":
			m.Reason = strings.TrimSpace(val)
		case "timeout":
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 {
				return Marker{}, fmt.Errorf("guide marker %s: timeout=%q is not a positive duration", kind, val)
			}
			m.Timeout = d
		case "until":
			re, err := regexp.Compile("(?m)" + val)
			if err != nil {
				return Marker{}, fmt.Errorf("guide marker %s: until: %w", kind, err)
			}
			m.Until = re
		case "ready":
			m.Ready = strings.Fields(val)
			for _, u := range m.Ready {
				if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
					return Marker{}, fmt.Errorf("guide marker %s: ready=%q is not an http(s) URL", kind, u)
				}
			}
		}
	}
	if kind != Run && m.Reason == "" {
		return Marker{}, fmt.Errorf("guide marker %s: reason= is required (say why the block does not run as written)", kind)
	}
	if m.InBackground() && m.Until == nil && len(m.Ready) == 0 {
		return Marker{}, fmt.Errorf("guide marker %s: until= or ready= is required (how the test knows it is up)", kind)
	}
	return m, nil
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
