package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The verifier matches one computed independently (Python's hashlib with
// the same salt), in the format PostgreSQL stores and accepts in ALTER ROLE
// … PASSWORD.
func TestSCRAMVerifierMatchesAnIndependentComputation(t *testing.T) {
	t.Parallel()
	salt := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	v, err := scramVerifier("pencil", salt)
	require.NoError(t, err)
	require.Equal(t, "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$zHCdol2044/ZyWzPLi7oxApCkamKw9Z+E4U/QApd/5Y=:dd5peBOitVnLNFu7VmwP+HiDaaw4OUCv396eVCWhYiE=", v)
	r, err := scramVerifier("pencil", nil)
	require.NoError(t, err)
	require.NotEqual(t, v, r, "a random salt by default")
	require.NotContains(t, r, "pencil")
	require.False(t, strings.ContainsAny(r, "'\\"), "safe inside a literal")
}

func TestPasswordsMustBePrintableASCII(t *testing.T) {
	t.Parallel()
	require.NoError(t, checkPassword("s3cr3t-P@ss word!"))
	require.Error(t, checkPassword("pässword"))
	require.Error(t, checkPassword("line\nbreak"))
}
