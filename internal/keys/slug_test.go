package keys

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidSlugIsTheSchemasCheck(t *testing.T) {
	t.Parallel()
	sql, err := os.ReadFile("../../migrations/0001_foundation.sql")
	require.NoError(t, err)
	require.Contains(t, string(sql), "CHECK (slug ~ '"+SlugPattern+"')", "keys.SlugPattern must be the endpoints.slug CHECK")

	re := regexp.MustCompile(SlugPattern)
	tests := []struct {
		slug string
		want bool
	}{
		{"stripe", true},
		{"a", true},
		{"0-x_y", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("a", 64<<10), false},
		{"", false},
		{"-a", false},
		{"_a", false},
		{"Stripe", false},
		{"a.b", false},
		{"a/b", false},
		{"a b", false},
		{"\xff", false},
		{"a\xff", false},
		{"é", false},
		{"a\x00", false},
		{"a\n", false},
		{"%ff", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ValidSlug(tt.slug), "%q", tt.slug)
		require.Equal(t, re.MatchString(tt.slug), ValidSlug(tt.slug), "ValidSlug and SlugPattern disagree on %q", tt.slug)
	}
}
