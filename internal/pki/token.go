package pki

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Token kinds.
const (
	KindEnroll = "enroll" // one-time: enrolls an agent
	KindAdmin  = "admin"  // logs the admin CLI in
)

// tokenPrefix names the token format's version. A new format takes a new
// prefix; this one never changes meaning.
const tokenPrefix = "kura1-"

const (
	secretBytes = 32
	secretLen   = 43 // base64url, no padding, of secretBytes
	fpLen       = 64 // hex SHA-256
)

// ErrBadToken reports a string that is not a well-formed token.
var ErrBadToken = errors.New("pki: bad token")

// secretEncoding is strict so that each secret has exactly one text form
// and ParseToken(t.String()) round-trips byte for byte.
var secretEncoding = base64.RawURLEncoding.Strict()

// Token is a one-time enrollment token or an admin token. Its text form is
//
//	kura1-<kind>-<secret>-<cafp>
//
// with Kind "enroll" or "admin", Secret 32 random bytes in unpadded
// base64url (43 characters, which may include '-'), and CAFingerprint the CA
// fingerprint as 64 lowercase hex digits. The server stores only
// HashSecret(Secret).
type Token struct {
	Kind          string
	Secret        string
	CAFingerprint string
}

// NewToken makes a token of kind with a fresh random secret, pinning the CA
// fingerprint caFP.
func NewToken(kind, caFP string) (Token, error) {
	if !validKind(kind) {
		return Token{}, fmt.Errorf("%w: unknown kind %q", ErrBadToken, kind)
	}
	fp := normalizeFingerprint(caFP)
	if !validFingerprint(fp) {
		return Token{}, fmt.Errorf("%w: CA fingerprint %q is not %d hex digits", ErrBadToken, caFP, fpLen)
	}
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Token{}, fmt.Errorf("pki: token secret: %w", err)
	}
	return Token{Kind: kind, Secret: secretEncoding.EncodeToString(b[:]), CAFingerprint: fp}, nil
}

// String returns the token's text form.
func (t Token) String() string {
	return tokenPrefix + t.Kind + "-" + t.Secret + "-" + t.CAFingerprint
}

// ParseToken parses a token's text form, ignoring surrounding white space
// (such as the newline of a token file). Every malformation is an error
// wrapping ErrBadToken.
func ParseToken(s string) (Token, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return Token{}, fmt.Errorf("%w: does not start with %q", ErrBadToken, tokenPrefix)
	}
	kind, rest, ok := strings.Cut(rest, "-")
	if !ok {
		return Token{}, fmt.Errorf("%w: truncated", ErrBadToken)
	}
	if !validKind(kind) {
		return Token{}, fmt.Errorf("%w: unknown kind %q", ErrBadToken, kind)
	}
	// The secret may contain '-'; the fingerprint cannot.
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return Token{}, fmt.Errorf("%w: truncated", ErrBadToken)
	}
	secret, fp := rest[:i], rest[i+1:]
	if len(secret) != secretLen {
		return Token{}, fmt.Errorf("%w: secret has %d characters, want %d", ErrBadToken, len(secret), secretLen)
	}
	if b, err := secretEncoding.DecodeString(secret); err != nil || len(b) != secretBytes {
		return Token{}, fmt.Errorf("%w: secret is not base64url", ErrBadToken)
	}
	if !validFingerprint(fp) {
		return Token{}, fmt.Errorf("%w: CA fingerprint is not %d lowercase hex digits", ErrBadToken, fpLen)
	}
	return Token{Kind: kind, Secret: secret, CAFingerprint: fp}, nil
}

// ParseTokenKind is ParseToken that also requires the token's kind to be
// want, so an admin token given to enrollment is refused with ErrBadToken.
func ParseTokenKind(s, want string) (Token, error) {
	t, err := ParseToken(s)
	if err != nil {
		return Token{}, err
	}
	if t.Kind != want {
		return Token{}, fmt.Errorf("%w: this is an %s token, want %s", ErrBadToken, t.Kind, want)
	}
	return t, nil
}

// HashSecret is the lowercase hex SHA-256 of a token secret: what the server
// stores instead of the secret. The secret has 256 random bits, so a plain
// hash needs no salt or stretching.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// HashEqual compares two hashes (from HashSecret) in constant time.
func HashEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func validKind(kind string) bool { return kind == KindEnroll || kind == KindAdmin }

func validFingerprint(fp string) bool {
	if len(fp) != fpLen {
		return false
	}
	for i := 0; i < len(fp); i++ {
		c := fp[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
