package keys

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResourceRoundTripAndNoForgery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Resource
		want string
	}{
		{"plain", Resource{"stripe", "acct_1", "live", "subscription", "sub_9"}, "stripe/acct_1/live/subscription/sub_9"},
		{"slash in id", Resource{"github", "42", "live", "repository", "octo/hello"}, "github/42/live/repository/octo%2Fhello"},
		{"percent in id", Resource{"shopify", "a.myshopify.com", "live", "order", "1%2F2"}, "shopify/a.myshopify.com/live/order/1%252F2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.in.String())
			back, err := ParseResource(tt.in.String())
			require.NoError(t, err)
			require.Equal(t, tt.in, back)
		})
	}
	// An id crafted to look like extra path segments stays one segment.
	forged := Resource{"stripe", "acct_1", "live", "invoice", "x/live/subscription/sub_9"}
	require.NotEqual(t, Resource{"stripe", "acct_1", "live", "subscription", "sub_9"}.String(), forged.String())
}

func TestParseEventRejectsBadKeys(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a/b/c", "a/b/c/d/e", "a//c/d", "a/b/c/%zz"} {
		_, err := ParseEvent(s)
		require.Error(t, err, s)
	}
	k, err := ParseEvent(Event{"standard", "proj_1", "test", "msg_1/2"}.String())
	require.NoError(t, err)
	require.Equal(t, "msg_1/2", k.EventID)
}

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
