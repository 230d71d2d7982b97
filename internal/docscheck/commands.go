package docscheck

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command rule, which CheckCommand enforces:
//
// A documented command line is one whose program (the first word, after
// VAR=value assignments and a wrapper such as env or nice -n 10; any
// directory is ignored, so .tools/bin/hookinbox counts) is one of the
// programs checked. It is taken from
//
//   - every line of a fenced code block (a `\` at the end of a line joins
//     the next one). A block whose language is sh, bash, shell or console
//     is shell: pipes, &&, ;, redirections, comments and $(…) split or end
//     commands as the shell does, and $VAR, "$VAR" or $(…) is one value.
//     Any other block (```text, none) is a synopsis, below;
//   - every inline code span (it may run over a line break), read as a
//     synopsis. A span that names only a command, with no argument or flag
//     (`hookinbox explain`, `hookinbox inbox list|show`), is a name: the
//     command must exist, nothing more;
//   - every command's Example text, as shell.
//
// A synopsis is usage grammar: [x] is optional, (a | b) and a|b are
// alternatives, a standalone ... repeats what precedes it and is dropped.
// Every combination of choices must parse (up to maxVariants).
//
// A placeholder (…, <x>, or an ALL-CAPS word such as KEY, A,B, ID... or ±N)
// is exactly one argument or flag value; given to a flag that is not a
// string, it stands for a value the flag accepts. A placeholder where a
// group's subcommand goes (`hookinbox endpoints …`) stands for any of them,
// and the rest of that line is not checked.
//
// The line is parsed by the real command tree, as cobra would before
// running it: an unknown command, an unknown flag or a bad flag value, a
// wrong number of positional arguments, a missing required flag, flags
// that must go together given apart or a group with no subcommand all
// fail. Nothing is run.

// A CommandLine is one documented command line.
type CommandLine struct {
	Where   string // "file:line" or "command path Example"
	Program string // hookinbox, hookinbox-lab
	Words   []Word // after the program
	Name    bool   // may be a bare command name (from a code span)
}

// A Word is one argument of a command line.
type Word struct {
	Text        string
	Placeholder bool
}

func (c CommandLine) String() string {
	var b strings.Builder
	b.WriteString(c.Program)
	for _, w := range c.Words {
		b.WriteByte(' ')
		b.WriteString(w.Text)
	}
	return b.String()
}

// maxVariants caps the combinations one synopsis line expands into.
const maxVariants = 256

var (
	gluedOpt    = regexp.MustCompile(`\[[^\]]*\]`)
	angle       = regexp.MustCompile(`^<[^<>\s]+>$`)
	capsWord    = regexp.MustCompile(`^[±+-]?[A-Z][A-Z0-9_]*(?:[,:/.=][A-Z][A-Z0-9_]*)*(?:\.\.\.|…)?$`)
	assignment  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	shellLangs  = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
	fenceOpener = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
)

// IsPlaceholder says whether a word stands for one value.
func IsPlaceholder(s string) bool {
	s = gluedOpt.ReplaceAllString(s, "")
	return s == "…" || angle.MatchString(s) || capsWord.MatchString(s)
}

// MarkdownCommands returns the command lines of programs in a Markdown
// document called name, from its fenced code blocks and code spans.
func MarkdownCommands(name string, doc []byte, programs ...string) ([]CommandLine, []Problem) {
	lines := strings.Split(string(doc), "\n")
	var out []CommandLine
	var problems []Problem
	var prose []string // the text outside code blocks, blocks blanked
	for i := 0; i < len(lines); i++ {
		m := fenceOpener.FindStringSubmatch(lines[i])
		if m == nil {
			prose = append(prose, lines[i])
			continue
		}
		fence, lang := m[1], strings.ToLower(m[2])
		prose = append(prose, "")
		start := i + 1
		j := start
		for ; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), fence[:3]) && strings.Trim(strings.TrimSpace(lines[j]), fence[:1]) == "" {
				break
			}
		}
		body := lines[start:min(j, len(lines))]
		for range body {
			prose = append(prose, "")
		}
		if j < len(lines) {
			prose = append(prose, "")
		}
		where := func(k int) string { return fmt.Sprintf("%s:%d", name, start+k+1) }
		if shellLangs[lang] {
			cls, ps := shellBlockCommands(body, where, programs)
			out = append(out, cls...)
			problems = append(problems, ps...)
		} else if lang == "" || lang == "text" || lang == "txt" {
			for _, l := range synopsisLines(body) {
				out = append(out, synopsisCommands(where(l.first), l.text, programs, false)...)
			}
		}
		i = j
	}
	// Code spans: backtick runs in the prose; a span may cross one line
	// break but not a blank line.
	text := strings.Join(prose, "\n")
	for _, span := range codeSpans(text) {
		s := strings.ReplaceAll(span.text, `\|`, "|")
		out = append(out, synopsisCommands(fmt.Sprintf("%s:%d", name, span.line), s, programs, true)...)
	}
	return out, problems
}

type span struct {
	text string
	line int
	off  int // byte offset of its opening backtick in the text
}

// codeSpans finds the single-backtick code spans of text.
func codeSpans(text string) []span {
	var out []span
	line := 1
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			line++
		case '`':
			n := 1
			for i+n < len(text) && text[i+n] == '`' {
				n++
			}
			closer := strings.Repeat("`", n)
			rest := text[i+n:]
			end := strings.Index(rest, closer)
			if end < 0 || strings.Contains(rest[:end], "\n\n") {
				i += n - 1
				continue
			}
			body := rest[:end]
			out = append(out, span{text: strings.Join(strings.Fields(body), " "), line: line, off: i})
			line += strings.Count(body, "\n")
			i += n + end + n - 1
		}
	}
	return out
}

type logicalLine struct {
	text  string
	first int // index of its first physical line
}

// joinContinued joins lines ending in a backslash with the next.
func joinContinued(body []string) []logicalLine {
	var out []logicalLine
	for k := 0; k < len(body); k++ {
		first := k
		l := body[k]
		for strings.HasSuffix(strings.TrimRight(l, " \t"), `\`) && k+1 < len(body) {
			l = strings.TrimSuffix(strings.TrimRight(l, " \t"), `\`) + " " + body[k+1]
			k++
		}
		out = append(out, logicalLine{text: l, first: first})
	}
	return out
}

// synopsisLines joins the lines of a synopsis block: a line ending in a
// backslash, or an indented line after a command, continues it. A line
// that starts indented is not a command (a diagram, an output).
func synopsisLines(body []string) []logicalLine {
	var out []logicalLine
	for _, l := range joinContinued(body) {
		indented := strings.HasPrefix(l.text, " ") || strings.HasPrefix(l.text, "\t")
		text := stripComment(l.text)
		switch {
		case text == "":
			out = append(out, logicalLine{}) // a blank line ends a command
		case indented && len(out) > 0 && out[len(out)-1].text != "":
			out[len(out)-1].text += " " + text
		case indented:
			out = append(out, logicalLine{})
		default:
			out = append(out, logicalLine{text: text, first: l.first})
		}
	}
	var kept []logicalLine
	for _, l := range out {
		if l.text != "" {
			kept = append(kept, l)
		}
	}
	return kept
}

// stripComment drops a # comment (a # that starts a word) and a "$ "
// prompt.
func stripComment(l string) string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "$ ")
	if strings.HasPrefix(l, "#") {
		return ""
	}
	if i := strings.Index(l, " #"); i >= 0 {
		l = l[:i]
	}
	return strings.TrimSpace(l)
}

// ExampleCommands returns the command lines of the Example text of every
// command of the tree under root, read as shell.
func ExampleCommands(root *cobra.Command) ([]CommandLine, []Problem) {
	var out []CommandLine
	var problems []Problem
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example != "" {
			var body []string
			for _, l := range strings.Split(c.Example, "\n") {
				body = append(body, strings.TrimPrefix(strings.TrimSpace(l), "$ "))
			}
			where := func(int) string { return c.CommandPath() + " Example" }
			cls, ps := shellBlockCommands(body, where, []string{root.Name()})
			if len(cls) == 0 {
				problems = append(problems, Problem{Text: c.CommandPath(), Why: "its Example has no " + root.Name() + " command line"})
			}
			out = append(out, cls...)
			problems = append(problems, ps...)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out, problems
}

// shellBlockCommands splits shell text into simple commands and keeps
// those of programs.
// hereDocument finds a here-document's start (<<EOF, <<'EOF', <<-"EOF") and
// its terminator.
var hereDocument = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

func shellBlockCommands(body []string, where func(int) string, programs []string) ([]CommandLine, []Problem) {
	var out []CommandLine
	var problems []Problem
	// B=.tools/bin/hookinbox on a line of its own makes $B that program.
	aliases := map[string]string{}
	joined := joinContinued(body)
	heredoc := ""
	for k := 0; k < len(joined); k++ {
		l := joined[k]
		if heredoc != "" {
			// A here-document's body is a file's text (Go source, SQL), not
			// commands: skipped up to its terminator.
			if strings.TrimSpace(l.text) == heredoc {
				heredoc = ""
			}
			continue
		}
		if m := hereDocument.FindStringSubmatch(l.text); m != nil {
			heredoc = m[1]
		}
		text := strings.TrimPrefix(strings.TrimSpace(l.text), "$ ")
		cmds, err := shellSplit(text)
		for err != nil && strings.HasPrefix(err.Error(), "unterminated") && k+1 < len(joined) {
			k++ // a quote open over a line break
			text += "\n" + joined[k].text
			cmds, err = shellSplit(text)
		}
		if err != nil {
			problems = append(problems, Problem{Text: where(l.first) + ": " + text, Why: err.Error()})
			continue
		}
		for _, words := range cmds {
			if len(words) == 1 && assignment.MatchString(words[0].Text) {
				name, value, _ := strings.Cut(words[0].Text, "=")
				if slices.Contains(programs, path.Base(value)) {
					aliases["$"+name], aliases["${"+name+"}"] = path.Base(value), path.Base(value)
				}
				continue
			}
			if p, ok := aliases[words[0].Text]; ok {
				words = append([]Word{{Text: p}}, words[1:]...)
			}
			if cl, ok := programLine(where(l.first), words, programs); ok {
				out = append(out, cl)
			}
		}
	}
	return out, problems
}

// programLine strips assignments and wrappers and keeps a line of one of
// programs.
func programLine(where string, words []Word, programs []string) (CommandLine, bool) {
	for len(words) > 0 {
		w := words[0].Text
		switch {
		case assignment.MatchString(w) || w == "env" || w == "exec" || w == "sudo" || w == "time" || w == "nohup" || w == "command":
			words = words[1:]
		case w == "nice" && len(words) > 2 && words[1].Text == "-n":
			words = words[3:]
		case w == "timeout" && len(words) > 1:
			words = words[2:]
		default:
			for _, p := range programs {
				if path.Base(w) == p {
					return CommandLine{Where: where, Program: p, Words: words[1:]}, true
				}
			}
			return CommandLine{}, false
		}
	}
	return CommandLine{}, false
}

// shellSplit splits one logical shell line into its simple commands, as
// words. It knows quotes, backslashes, comments, ; & | && ||, redirections
// (dropped with their target) and $(…) or `…` (one placeholder word; the
// commands inside are returned too).
func shellSplit(s string) ([][]Word, error) {
	var cmds [][]Word
	var cur []Word
	var w strings.Builder
	inWord, ph := false, false
	endWord := func() {
		if inWord {
			cur = append(cur, Word{Text: w.String(), Placeholder: ph || IsPlaceholder(w.String())})
		}
		w.Reset()
		inWord, ph = false, false
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	skipRedirect := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			w.WriteByte(s[i+1])
			inWord = true
			i++
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			w.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					w.WriteByte(s[j])
					continue
				}
				if s[j] == '$' || s[j] == '`' {
					ph = true
				}
				w.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, errors.New(`unterminated " quote`)
			}
			inWord = true
			i = j
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			depth, j := 1, i+2
			for ; j < len(s) && depth > 0; j++ {
				switch s[j] {
				case '(':
					depth++
				case ')':
					depth--
				}
			}
			if depth > 0 {
				return nil, errors.New("unterminated $(")
			}
			inner, err := shellSplit(s[i+2 : j-1])
			if err != nil {
				return nil, err
			}
			cmds = append(cmds, inner...)
			w.WriteString(s[i:j])
			inWord, ph = true, true
			i = j - 1
		case c == '$':
			w.WriteByte(c)
			inWord, ph = true, true
		case c == '`':
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				return nil, errors.New("unterminated `")
			}
			w.WriteString(s[i : i+end+2])
			inWord, ph = true, true
			i += end + 1
		case c == '#' && !inWord:
			i = len(s)
		case c == ' ' || c == '\t':
			endWord()
			if skipRedirect && len(cur) > 0 {
				cur = cur[:len(cur)-1]
				skipRedirect = false
			}
		case c == '<' && !inWord && angleAt(s[i:]) > 0:
			n := angleAt(s[i:])
			w.WriteString(s[i : i+n])
			inWord, ph = true, true
			i += n - 1
		case c == '>' || c == '<':
			// A redirection: drop a fd number before it and its target.
			if inWord && isDigits(w.String()) {
				w.Reset()
				inWord = false
			}
			endWord()
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&' || s[i+1] == '<') {
				i++
			}
			if i+1 < len(s) && isDigits(string(s[i+1])) && s[i] == '&' {
				i++
				continue
			}
			for i+1 < len(s) && s[i+1] == ' ' {
				i++
			}
			skipRedirect = true
		case c == ';' || c == '|' || c == '&' || c == '\n' || c == '(' || c == ')':
			endCmd()
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if skipRedirect && len(cur) > 0 {
		cur = cur[:len(cur)-1]
	}
	endCmd()
	return cmds, nil
}

// angleAt is the length of a <placeholder> at the start of s, or 0.
func angleAt(s string) int {
	end := strings.IndexByte(s, '>')
	if end < 2 || !angle.MatchString(s[:end+1]) {
		return 0
	}
	if c := s[1]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
		return 0
	}
	return end + 1
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// synopsisCommands reads one synopsis line (or code span): it keeps it if
// it starts with a program and returns one CommandLine per combination of
// its choices.
func synopsisCommands(where, text string, programs []string, name bool) []CommandLine {
	toks := synopsisTokens(text)
	if len(toks) == 0 {
		return nil
	}
	prog := ""
	for _, p := range programs {
		if path.Base(toks[0]) == p {
			prog = p
		}
	}
	if prog == "" {
		return nil
	}
	// A | between spaces outside brackets is a pipe: the command ends.
	depth := 0
	for i, t := range toks {
		switch t {
		case "[", "(":
			depth++
		case "]", ")":
			depth--
		case "|":
			if depth == 0 {
				toks = toks[:i]
			}
		}
		if len(toks) == i {
			break
		}
	}
	node, _ := parseAlt(toks[1:], 0)
	var out []CommandLine
	for _, v := range node.expand() {
		var words []Word
		for _, t := range v {
			words = append(words, Word{Text: t, Placeholder: IsPlaceholder(t)})
		}
		out = append(out, CommandLine{Where: where, Program: prog, Words: words, Name: name})
		if len(out) == maxVariants {
			break
		}
	}
	return out
}

// synopsisTokens splits on spaces and makes [ ] ( ) | tokens of their own
// (not inside quotes); quotes are removed.
func synopsisTokens(s string) []string {
	var toks []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			toks = append(toks, w.String())
		}
		w.Reset()
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				w.WriteString(s[i+1:])
				i = len(s)
			} else {
				w.WriteString(s[i+1 : i+1+end])
				i += end + 1
			}
			inWord = true
		case c == ' ' || c == '\t':
			flush()
		case c == '[' && inWord:
			// S[,S…]: an optional part of one word stays in it.
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				end = len(s) - i - 1
			}
			w.WriteString(s[i : i+end+1])
			i += end
		case c == '|' && inWord && i+1 < len(s) && !strings.ContainsRune(" \t[]()|", rune(s[i+1])):
			flush()
			toks = append(toks, tightBar) // live|test: a choice of words
		case c == '[' || c == ']' || c == '(' || c == ')' || c == '|':
			flush()
			toks = append(toks, string(c))
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	// "X)…" and "]..." repeat: drop a repetition marker that follows a
	// group; "ID..." is a placeholder already.
	var out []string
	for i, t := range toks {
		if (t == "..." || t == "…") && i > 0 && (toks[i-1] == ")" || toks[i-1] == "]") {
			continue
		}
		if t == "..." {
			continue
		}
		if strings.HasSuffix(t, "…") && t != "…" && i+1 <= len(toks) && strings.TrimSuffix(t, "…") == ")" {
			continue
		}
		out = append(out, t)
	}
	return out
}

// A synopsis node: a sequence of items, each a word or a choice.
type synNode struct {
	word     string
	alts     [][]*synNode // a choice between sequences
	optional bool
}

// parseAlt parses alternatives separated by | up to a closing bracket.
func parseAlt(toks []string, i int) (*synNode, int) {
	n := &synNode{}
	var seq []*synNode
	for i < len(toks) {
		t := toks[i]
		switch t {
		case "|":
			n.alts = append(n.alts, seq)
			seq = nil
			i++
		case "]", ")":
			n.alts = append(n.alts, seq)
			return n, i
		case "[", "(":
			sub, j := parseAlt(toks, i+1)
			sub.optional = t == "["
			seq = append(seq, sub)
			i = j + 1
		default:
			if i+2 < len(toks) && toks[i+1] == tightBar {
				choice := &synNode{alts: [][]*synNode{{{word: t}}}}
				for i+2 < len(toks) && toks[i+1] == tightBar {
					choice.alts = append(choice.alts, []*synNode{{word: toks[i+2]}})
					i += 2
				}
				seq = append(seq, choice)
				i++
				continue
			}
			seq = append(seq, &synNode{word: t})
			i++
		}
	}
	n.alts = append(n.alts, seq)
	return n, i
}

// tightBar is a | written between two words, without spaces.
const tightBar = "\x00|"

// expand returns every combination of the node's choices, as words.
func (n *synNode) expand() [][]string {
	if n.alts == nil {
		return [][]string{{n.word}}
	}
	var out [][]string
	if n.optional {
		out = append(out, nil)
	}
	for _, seq := range n.alts {
		out = append(out, expandSeq(seq)...)
		if len(out) > maxVariants {
			return out[:maxVariants]
		}
	}
	return out
}

// expandSeq joins words to a word alternative on either side of them when
// they are written together ("live|test" is one choice), then multiplies
// the choices of the sequence.
func expandSeq(seq []*synNode) [][]string {
	out := [][]string{nil}
	for _, item := range seq {
		var next [][]string
		for _, prefix := range out {
			for _, v := range item.expand() {
				next = append(next, append(append([]string(nil), prefix...), v...))
				if len(next) >= maxVariants {
					break
				}
			}
		}
		out = next
	}
	return out
}

// CheckCommand parses one command line with a fresh command tree from
// newRoot, as cobra would before running it, and says what is wrong (nil:
// it parses).
func CheckCommand(newRoot func() *cobra.Command, cl CommandLine) error {
	root := newRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultVersionFlag()
	cmd := root
	words := cl.Words
	path := []string{root.Name()}
	for len(words) > 0 && cmd.HasSubCommands() && !strings.HasPrefix(words[0].Text, "-") {
		w := words[0]
		var sub *cobra.Command
		for _, c := range cmd.Commands() {
			if c.Name() == w.Text || c.HasAlias(w.Text) {
				sub = c
			}
		}
		if sub == nil {
			if cmd.Runnable() && cmd.Args != nil {
				break // an argument of a runnable command with subcommands
			}
			if w.Placeholder && !cmd.Runnable() {
				return nil // any subcommand: the rest cannot be checked
			}
			return fmt.Errorf("unknown command %q for %q", w.Text, strings.Join(path, " "))
		}
		cmd = sub
		path = append(path, sub.Name())
		words = words[1:]
	}
	if len(words) == 0 && cl.Name {
		return nil // a command's name, written as code
	}
	cmd.InitDefaultHelpFlag()
	_ = cmd.InheritedFlags() // merges the persistent flags into cmd.Flags()
	flags := cmd.Flags()
	var args []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w.Text, "-") || w.Text == "-" || w.Text == "--" {
			args = append(args, w.Text)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w.Text, "-"), "=")
		var f *pflag.Flag
		if strings.HasPrefix(w.Text, "--") {
			f = flags.Lookup(name)
		} else if len(name) == 1 {
			f = flags.ShorthandLookup(name)
		}
		if f == nil {
			args = append(args, w.Text) // ParseFlags reports it
			continue
		}
		switch {
		case hasValue:
			if IsPlaceholder(value) {
				args = append(args, w.Text[:len(w.Text)-len(value)]+sampleValue(f, value))
			} else {
				args = append(args, w.Text)
			}
		case f.NoOptDefVal != "":
			args = append(args, w.Text)
		case i+1 < len(words):
			args = append(args, w.Text)
			i++
			if words[i].Placeholder {
				args = append(args, sampleValue(f, words[i].Text))
			} else {
				args = append(args, words[i].Text)
			}
		default:
			args = append(args, w.Text) // ParseFlags reports the missing value
		}
	}
	if err := cmd.ParseFlags(args); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if help, _ := flags.GetBool("help"); help {
		return nil
	}
	if v, err := flags.GetBool("version"); err == nil && v && cmd == root {
		return nil
	}
	if !cmd.Runnable() {
		return fmt.Errorf("%s is a group: it needs one of its subcommands", cmd.CommandPath())
	}
	if err := cmd.ValidateArgs(flags.Args()); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return nil
}

// sampleValue is what a placeholder given to f stands for: itself for a
// flag that takes any string, else the first of a few values f accepts.
func sampleValue(f *pflag.Flag, placeholder string) string {
	candidates := []string{placeholder, f.DefValue, "1", "1s", "true", "x", "2026-01-02T15:04:05Z", "a=b"}
	for _, c := range candidates {
		if c == "" || c == "[]" {
			continue
		}
		if err := f.Value.Set(c); err == nil {
			return c
		}
	}
	return placeholder
}

// CheckCommands checks every line with the tree of its program and
// returns one problem per line that does not parse.
func CheckCommands(trees map[string]func() *cobra.Command, lines []CommandLine) []string {
	var problems []string
	for _, cl := range lines {
		newRoot, ok := trees[cl.Program]
		if !ok {
			continue
		}
		if err := CheckCommand(newRoot, cl); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %v", cl.Where, cl, err))
		}
	}
	return problems
}

// DocumentedCommands returns the command lines of programs in the docs of
// the repository at root: README.md, every docs/*.md, and CHANGELOG.md's
// newest release section only (from its first "## v" or "## Unreleased"
// heading to the next "## " heading). The older sections describe the
// commands of their own release, which may since have changed with a note.
func DocumentedCommands(root string, programs ...string) ([]CommandLine, []Problem, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, nil, err
	}
	files = append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}, files...)
	var out []CommandLine
	var problems []Problem
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		rel, _ := filepath.Rel(root, f)
		if rel == "CHANGELOG.md" {
			doc = CurrentRelease(doc)
		}
		cls, ps := MarkdownCommands(filepath.ToSlash(rel), doc, programs...)
		out = append(out, cls...)
		problems = append(problems, ps...)
	}
	return out, problems, nil
}

// CurrentRelease blanks every line of a changelog outside its newest
// release section, keeping line numbers.
func CurrentRelease(changelog []byte) []byte {
	lines := strings.Split(string(changelog), "\n")
	in, done := false, false
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			if in {
				done = true
			}
			h := strings.TrimPrefix(l, "## ")
			if !done && (strings.HasPrefix(h, "v") || strings.HasPrefix(strings.ToLower(h), "unreleased")) {
				in = true
			}
		}
		if !in || done {
			lines[i] = ""
		}
	}
	return []byte(strings.Join(lines, "\n"))
}
