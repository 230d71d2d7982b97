package keys

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The event and resource keys are tested with their type, in hookintype.

func TestMarkdownTextEscapesEveryMarkupCharacter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"sub_9", `sub\_9`},
		{"[x](javascript:alert(1))", `\[x\]\(javascript\:alert\(1\)\)`},
		{"<img src=x onerror=alert(1)>", `\<img src=x onerror=alert\(1\)\>`},
		{"**bold** ~~s~~ `c` |t| #h", `\*\*bold\*\* \~\~s\~\~ \` + "`" + `c\` + "`" + ` \|t\| \#h`},
		{"a\n# heading\r\n- item", `a \# heading  \- item`},
		{"www.evil.example &amp;", `www\.evil\.example \&amp;`},
		{"acct=1;x,y/z?@'\"%", "acct=1;x,y/z?@'\"%"},
		{"ünïcode", "ünïcode"},
	} {
		require.Equal(t, tt.want, MarkdownText(tt.in), tt.in)
	}
}
