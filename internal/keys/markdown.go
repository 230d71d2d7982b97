package keys

import "strings"

// MarkdownText escapes s for a Markdown text: what the Temporal UI renders
// a workflow's summary and details, and an activity's summary, as (with
// GitHub's extensions and raw HTML). Every character that can start markup
// is backslash-escaped, so no link, image, HTML tag, entity, emphasis,
// code span, table or autolink can come out of a value a sender chose (a
// resource id, a kind, an account, an event id, an error that quotes one);
// line breaks and other control characters become spaces, so no block (a
// heading, a list, a quote) can either. Rendered, it reads as s.
func MarkdownText(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case r < 0x80 && strings.ContainsRune(markdownEscaped, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownEscaped are the characters escaped: the ASCII punctuation the
// Temporal UI's renderer takes a backslash escape of (it drops the
// backslash), which includes every one that starts markup (< > & for HTML
// and entities; [ ] ( ) ! for links and images; * _ ~ ` for emphasis and
// code; # - + . for headings and lists; | for tables; : and . for
// autolinks). The rest of ASCII punctuation (" % ' , / ; = ? @) means
// nothing without one of these, and a backslash before it would show.
const markdownEscaped = "!#$&()*+-.:<>[\\]^_`{|}~"
