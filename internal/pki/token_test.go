package pki

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const testFP = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestTokenRoundTrip(t *testing.T) {
	for _, kind := range []string{KindEnroll, KindAdmin} {
		tok, err := NewToken(kind, strings.ToUpper(testFP))
		if err != nil {
			t.Fatal(err)
		}
		s := tok.String()
		if want := "kura1-" + kind + "-"; !strings.HasPrefix(s, want) {
			t.Errorf("%q does not start with %q", s, want)
		}
		if !strings.HasSuffix(s, "-"+testFP) {
			t.Errorf("%q does not end with the lowercase fingerprint", s)
		}
		if len(tok.Secret) != 43 {
			t.Errorf("secret %q has %d characters, want 43", tok.Secret, len(tok.Secret))
		}
		for _, in := range []string{s, "  " + s + "\n", s + "\r\n"} {
			got, err := ParseToken(in)
			if err != nil {
				t.Fatalf("ParseToken(%q): %v", in, err)
			}
			if got != tok {
				t.Errorf("ParseToken(%q) = %+v, want %+v", in, got, tok)
			}
		}
		got, err := ParseTokenKind(s, kind)
		if err != nil || got != tok {
			t.Errorf("ParseTokenKind(%q, %q) = %+v, %v", s, kind, got, err)
		}
	}
	a, _ := NewToken(KindEnroll, testFP)
	b, _ := NewToken(KindEnroll, testFP)
	if a.Secret == b.Secret {
		t.Error("two tokens share a secret")
	}
}

// TestTokenSecretWithDashes: '-' is in the base64url alphabet, so the
// secret may contain the separator, at either end or throughout.
func TestTokenSecretWithDashes(t *testing.T) {
	var b [secretBytes]byte
	for i := range b {
		b[i] = []byte{0xfb, 0xef, 0xbe}[i%3] // encodes as "----"
	}
	secret := secretEncoding.EncodeToString(b[:])
	if !strings.HasPrefix(secret, "----") {
		t.Fatalf("secret %q does not start with dashes", secret)
	}
	b[0], b[1], b[2] = 0, 0, 0 // "AAAA" first, dashes after
	for _, secret := range []string{secret, secretEncoding.EncodeToString(b[:])} {
		tok := Token{Kind: KindAdmin, Secret: secret, CAFingerprint: testFP}
		got, err := ParseToken(tok.String())
		if err != nil {
			t.Fatalf("ParseToken(%q): %v", tok, err)
		}
		if got != tok {
			t.Errorf("ParseToken(%q) = %+v", tok, got)
		}
	}
}

func TestParseTokenBad(t *testing.T) {
	tok, err := NewToken(KindEnroll, testFP)
	if err != nil {
		t.Fatal(err)
	}
	good := tok.String()
	sec := tok.Secret
	bad := map[string]string{
		"empty":             "",
		"space":             "   \n",
		"garbage":           "hello world",
		"prefix only":       "kura1-",
		"kind only":         "kura1-enroll",
		"kind and dash":     "kura1-enroll-",
		"no fingerprint":    "kura1-enroll-" + sec,
		"empty fingerprint": "kura1-enroll-" + sec + "-",
		"wrong version":     strings.Replace(good, "kura1-", "kura2-", 1),
		"upper-case prefix": strings.Replace(good, "kura1-", "KURA1-", 1),
		"unknown kind":      strings.Replace(good, "-enroll-", "-root-", 1),
		"empty kind":        strings.Replace(good, "-enroll-", "--", 1),
		"short secret":      "kura1-enroll-" + sec[1:] + "-" + testFP,
		"long secret":       "kura1-enroll-" + sec + "A-" + testFP,
		"secret not base64": "kura1-enroll-" + "+" + sec[1:] + "-" + testFP,
		// The last of 43 characters carries 4 bits and 2 zero bits; "B"
		// (000001) sets one of those, so it is never canonical.
		"secret noncanonical": "kura1-enroll-" + sec[:42] + "B-" + testFP,
		"fingerprint short":   good[:len(good)-2],
		"fingerprint long":    good + "00",
		"fingerprint upper":   "kura1-enroll-" + sec + "-" + strings.ToUpper(testFP),
		"fingerprint not hex": "kura1-enroll-" + sec + "-" + strings.Repeat("g", 64),
		"extra field":         good + "-00",
		"inner space":         strings.Replace(good, "-enroll-", "-enroll -", 1),
		"two tokens":          good + " " + good,
	}
	for i := 0; i < len(good); i++ {
		bad[fmt.Sprintf("truncated to %d", i)] = good[:i]
	}
	for name, s := range bad {
		got, err := ParseToken(s)
		if !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: ParseToken(%q) = %+v, %v; want ErrBadToken", name, s, got, err)
		}
	}
}

func TestParseTokenKind(t *testing.T) {
	tok, err := NewToken(KindAdmin, testFP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseTokenKind(tok.String(), KindEnroll); !errors.Is(err, ErrBadToken) {
		t.Errorf("admin token accepted for enrollment: %v", err)
	}
}

func TestNewTokenBad(t *testing.T) {
	if _, err := NewToken("root", testFP); !errors.Is(err, ErrBadToken) {
		t.Errorf("unknown kind: %v", err)
	}
	for _, fp := range []string{"", "abc", testFP + "0", strings.Repeat("z", 64)} {
		if _, err := NewToken(KindEnroll, fp); !errors.Is(err, ErrBadToken) {
			t.Errorf("fingerprint %q: %v", fp, err)
		}
	}
}

func TestHashSecret(t *testing.T) {
	// SHA-256 of "abc" (FIPS 180-2 example).
	if got, want := HashSecret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("HashSecret(abc) = %s, want %s", got, want)
	}
	tok, err := NewToken(KindEnroll, testFP)
	if err != nil {
		t.Fatal(err)
	}
	h := HashSecret(tok.Secret)
	if strings.Contains(h, tok.Secret) {
		t.Error("hash contains the secret")
	}
	if !HashEqual(h, HashSecret(tok.Secret)) {
		t.Error("equal hashes compare unequal")
	}
	other, _ := NewToken(KindEnroll, testFP)
	for _, b := range []string{HashSecret(other.Secret), h[:63], "", h + "0"} {
		if HashEqual(h, b) {
			t.Errorf("HashEqual(%q, %q) = true", h, b)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	tok, err := NewToken(KindEnroll, testFP)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok.String())
	f.Add(" " + tok.String() + "\n")
	f.Add("kura1-admin-" + strings.Repeat("-", 42) + "8-" + testFP)
	f.Add("kura1-enroll--")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err != nil {
			if !errors.Is(err, ErrBadToken) {
				t.Fatalf("ParseToken(%q): error %v does not wrap ErrBadToken", s, err)
			}
			return
		}
		if got := tok.String(); got != strings.TrimSpace(s) {
			t.Fatalf("ParseToken(%q).String() = %q", s, got)
		}
		again, err := ParseToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("re-parse of %q: %+v, %v", tok, again, err)
		}
	})
}
