// Package secretbox seals the secrets hookinbox keeps in its database
// (signing secrets, provider API keys, destination secrets) with envelope
// encryption: each value gets its own random data key, the data key is
// wrapped by a key-encryption key kept outside the database (an environment
// variable or a key file), and the key's id is stored beside the value so
// several keys can coexist while one is rotated. AES-256-GCM throughout,
// standard library only. It never logs, prints or stores a key or a value,
// and never returns garbage for a wrong key: GCM authenticates every byte.
//
// A sealed value is (binary, stored as bytea):
//
//	0x01 | wrap nonce (12) | data key wrapped by the KEK (32 + 16 tag) | data nonce (12) | ciphertext + tag (len + 16)
//
// The data key's wrapping is bound to the key id (a value moved under
// another id fails), and the ciphertext to a context string chosen by the
// caller (the row it belongs to: a value copied into another row fails).
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// KeySize is the size of a key-encryption key and of a data key.
const KeySize = 32

const (
	version   byte = 1
	nonceSize      = 12
	tagSize        = 16
	wrapped        = KeySize + tagSize
	overhead       = 1 + nonceSize + wrapped + nonceSize + tagSize
)

// ErrNoKey means no key-encryption key is configured.
var ErrNoKey = errors.New("no secrets key configured: set HOOKINBOX_SECRETS_KEY (base64 of 32 random bytes) " +
	"or HOOKINBOX_SECRETS_KEY_FILE (lines of id:base64key, the first is current); " +
	"'hookinbox secrets generate-key' prints one, 'make run' keeps one in .data/secrets.key")

// ErrUnknownKey means a value was sealed under a key id the keyring does not hold.
var ErrUnknownKey = errors.New("sealed under a key the keyring does not hold")

// ErrCannotOpen means the key does not open the value (wrong key, a value moved
// to another row, or corruption).
var ErrCannotOpen = errors.New("cannot open sealed value: wrong key, wrong row or corrupted")

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Key is one key-encryption key.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring holds the current key (which seals) and older ones (which only
// open). It is safe for concurrent use and immutable.
type Keyring struct {
	current string
	ids     []string
	aeads   map[string]cipher.AEAD
	fpKey   []byte
}

// New builds a keyring; keys[0] is the current one.
func New(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, ErrNoKey
	}
	k := &Keyring{current: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, key := range keys {
		if !idPattern.MatchString(key.ID) {
			return nil, fmt.Errorf("secrets key id %q: use 1-64 letters, digits, '.', '_' or '-'", key.ID)
		}
		if len(key.Secret) != KeySize {
			return nil, fmt.Errorf("secrets key %q: %d bytes, want %d (base64 of 32 random bytes)", key.ID, len(key.Secret), KeySize)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("secrets key id %q appears twice", key.ID)
		}
		a, err := newGCM(key.Secret)
		if err != nil {
			return nil, err
		}
		k.aeads[key.ID] = a
		k.ids = append(k.ids, key.ID)
	}
	mac := hmac.New(sha256.New, keys[0].Secret)
	mac.Write([]byte("hookinbox/secretbox/v1/fingerprint"))
	k.fpKey = mac.Sum(nil)
	return k, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// DerivedID is the id of a key given bare (HOOKINBOX_SECRETS_KEY): a
// non-reversible tag of the key itself, so the same key always has the same
// id and a key file can list it as an older key.
func DerivedID(secret []byte) string {
	h := sha256.Sum256(append([]byte("hookinbox/secretbox/v1/key-id\x00"), secret...))
	return "k" + hex.EncodeToString(h[:6])
}

// ParseKey reads a bare base64 key (HOOKINBOX_SECRETS_KEY); its id is
// DerivedID.
func ParseKey(b64 string) (*Keyring, error) {
	secret, err := decodeKey(b64)
	if err != nil {
		return nil, fmt.Errorf("HOOKINBOX_SECRETS_KEY: %w", err)
	}
	return New(Key{ID: DerivedID(secret), Secret: secret})
}

// ParseKeyFile reads a key file: one `id:base64key` per line, the first
// being current and the others decrypt-only; blank lines and lines starting
// with # are ignored.
func ParseKeyFile(data []byte) (*Keyring, error) {
	var keys []Key
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want id:base64key", i+1)
		}
		secret, err := decodeKey(b64)
		if err != nil {
			return nil, fmt.Errorf("line %d (key %q): %w", i+1, strings.TrimSpace(id), err)
		}
		keys = append(keys, Key{ID: strings.TrimSpace(id), Secret: secret})
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in the file")
	}
	return New(keys...)
}

func decodeKey(b64 string) ([]byte, error) {
	b64 = strings.TrimSpace(b64)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(b64); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("decodes to %d bytes, want %d", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Load builds the keyring from the configuration: key (HOOKINBOX_SECRETS_KEY)
// or file (HOOKINBOX_SECRETS_KEY_FILE), not both. Neither: ErrNoKey.
func Load(key, file string) (*Keyring, error) {
	switch {
	case key != "" && file != "":
		return nil, errors.New("set HOOKINBOX_SECRETS_KEY or HOOKINBOX_SECRETS_KEY_FILE, not both")
	case key != "":
		return ParseKey(key)
	case file != "":
		if err := checkPrivate(file); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("HOOKINBOX_SECRETS_KEY_FILE: %w", err)
		}
		k, err := ParseKeyFile(data)
		if err != nil {
			return nil, fmt.Errorf("HOOKINBOX_SECRETS_KEY_FILE %s: %w", file, err)
		}
		return k, nil
	}
	return nil, ErrNoKey
}

// checkPrivate refuses a key file that its group or other users may read
// or write: whoever reads it (and a copy of the database) holds every
// secret. A symbolic link is judged by the file it names (a mounted
// Kubernetes secret: give it defaultMode 0400).
func checkPrivate(file string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("HOOKINBOX_SECRETS_KEY_FILE: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("HOOKINBOX_SECRETS_KEY_FILE %s is open to its group or to others (mode %04o): refusing to use it; "+
			"chmod 600 %s (only its owner may read it)", file, perm, file)
	}
	return nil
}

// GenerateKey returns 32 random bytes, base64-encoded.
func GenerateKey() string {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.StdEncoding.EncodeToString(b)
}

// GenerateKeyLine returns a key file line `id:base64key` with a new key.
func GenerateKeyLine(id string) string { return id + ":" + GenerateKey() }

// CreateKeyFile writes a new key file at path (mode 0600) holding one new
// key with id, unless a file is already there: an existing key file is
// never rewritten, since the secrets sealed under it would be lost. It
// reports whether it created the file.
func CreateKeyFile(path, id string) (created bool, err error) {
	if _, err := New(Key{ID: id, Secret: make([]byte, KeySize)}); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	content := "# hookinbox secrets key file (HOOKINBOX_SECRETS_KEY_FILE): id:base64key lines, the first seals.\n" +
		"# Keep it and back it up apart from the database: the secrets sealed with it cannot be opened without it.\n" +
		GenerateKeyLine(id) + "\n"
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		_ = os.Remove(path) // best effort: the write already failed, and that error is the one to report
		return false, err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path) // best effort: the close already failed, and that error is the one to report
		return false, err
	}
	return true, nil
}

// CurrentID is the id of the key that seals.
func (k *Keyring) CurrentID() string { return k.current }

// IDs lists the keyring's key ids, current first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// Has reports whether the keyring holds key id.
func (k *Keyring) Has(id string) bool { _, ok := k.aeads[id]; return ok }

// Seal encrypts plaintext under a new data key wrapped by the current key.
// context binds the value to where it is stored (Open must be given the
// same). It returns the sealed value and the id of the key that wrapped it.
func (k *Keyring) Seal(plaintext []byte, context string) (sealed []byte, keyID string, err error) {
	dek := make([]byte, KeySize)
	out := make([]byte, 1+nonceSize, overhead+len(plaintext))
	out[0] = version
	if _, err := rand.Read(dek); err != nil {
		return nil, "", err
	}
	if _, err := rand.Read(out[1 : 1+nonceSize]); err != nil {
		return nil, "", err
	}
	out = k.aeads[k.current].Seal(out, out[1:1+nonceSize], dek, wrapAAD(k.current))
	dataNonce := make([]byte, nonceSize)
	if _, err := rand.Read(dataNonce); err != nil {
		return nil, "", err
	}
	out = append(out, dataNonce...)
	d, err := newGCM(dek)
	if err != nil {
		return nil, "", err
	}
	out = d.Seal(out, dataNonce, plaintext, dataAAD(context))
	return out, k.current, nil
}

// Open decrypts a value sealed under key keyID for context. A key the ring
// lacks is ErrUnknownKey; a key that does not open it (wrong key, another
// row's value, tampering) is ErrCannotOpen. It never returns garbage.
func (k *Keyring) Open(sealed []byte, keyID, context string) ([]byte, error) {
	a, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("key id %q: %w (the keyring holds %s)", keyID, ErrUnknownKey, strings.Join(k.ids, ", "))
	}
	if len(sealed) < overhead || sealed[0] != version {
		return nil, fmt.Errorf("key id %q: %w (not a sealed value of version %d)", keyID, ErrCannotOpen, version)
	}
	p := sealed[1:]
	wrapNonce, p := p[:nonceSize], p[nonceSize:]
	wrappedDEK, p := p[:wrapped], p[wrapped:]
	dataNonce, ct := p[:nonceSize], p[nonceSize:]
	dek, err := a.Open(nil, wrapNonce, wrappedDEK, wrapAAD(keyID))
	if err != nil {
		return nil, fmt.Errorf("key id %q: %w", keyID, ErrCannotOpen)
	}
	d, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	plain, err := d.Open(nil, dataNonce, ct, dataAAD(context))
	if err != nil {
		return nil, fmt.Errorf("key id %q: %w", keyID, ErrCannotOpen)
	}
	return plain, nil
}

// Fingerprint is a keyed, non-reversible tag of value (HMAC-SHA256 under a
// key derived from the current key), so a UNIQUE constraint can hold on a
// secret without storing it. It changes when the current key changes
// (rotation recomputes it).
func (k *Keyring) Fingerprint(purpose, value string) []byte {
	mac := hmac.New(sha256.New, k.fpKey)
	mac.Write([]byte(purpose))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return mac.Sum(nil)
}

func wrapAAD(keyID string) []byte   { return []byte("hookinbox/secretbox/v1/dek\x00" + keyID) }
func dataAAD(context string) []byte { return []byte("hookinbox/secretbox/v1/value\x00" + context) }
