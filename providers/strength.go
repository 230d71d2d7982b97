package providers

import (
	"fmt"
	"strings"
)

// MinSecretBytes is the least random material a signing secret must carry.
const MinSecretBytes = 24

// CheckRandom refuses key material too short or too uniform to hold
// MinSecretBytes random bytes: hex needs at least 48 characters, anything
// else (base64, base62 like Stripe's) at least 32, and either must use
// enough distinct characters to look random ("aaaa…", "abab…" and "0000…"
// are refused). It cannot prove randomness; it refuses what is surely not.
func CheckRandom(material string) error {
	distinct := map[rune]bool{}
	hexOnly := true
	for _, r := range material {
		distinct[r] = true
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			hexOnly = false
		}
	}
	n := len(material)
	switch {
	case n == 0:
		return fmt.Errorf("the secret is empty")
	case hexOnly && n < 2*MinSecretBytes:
		return fmt.Errorf("a hex secret of %d characters holds less than %d random bytes: use at least %d (e.g. openssl rand -hex 32)",
			n, MinSecretBytes, 2*MinSecretBytes)
	case !hexOnly && n < 32:
		return fmt.Errorf("a secret of %d characters holds less than %d random bytes: use at least 32 (e.g. openssl rand -base64 32)",
			n, MinSecretBytes)
	case hexOnly && len(distinct) < 10, !hexOnly && len(distinct) < 12:
		return fmt.Errorf("the secret repeats too few characters (%d distinct) to be random", len(distinct))
	}
	return nil
}
