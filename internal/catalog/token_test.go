package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestTokens(t *testing.T) { onBoth(t, testTokens) }

func testTokens(t *testing.T) {
	c, _ := openTemp(t)
	if toks, err := c.Tokens(); err != nil || len(toks) != 0 {
		t.Fatalf("Tokens of empty catalog: %v, %v", toks, err)
	}
	a := &Token{Hash: "h1", Kind: TokenEnroll, Name: "db1", Created: t0, Expires: t0.Add(time.Hour)}
	must(t, c.CreateToken(a))
	b := &Token{ID: 99, Hash: "h2", Kind: TokenEnroll, Expires: t0.Add(time.Hour)}
	must(t, c.CreateToken(b))
	if a.ID == 0 || b.ID <= a.ID {
		t.Fatalf("token IDs %d, %d", a.ID, b.ID)
	}
	if b.Created.IsZero() {
		t.Error("CreateToken did not set Created")
	}
	if err := c.CreateToken(&Token{Hash: "h1", Kind: TokenEnroll, Expires: t0}); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate hash: %v, want ErrExists", err)
	}
	for _, bad := range []Token{
		{Kind: TokenEnroll, Expires: t0},
		{Hash: "x", Kind: "admin", Expires: t0},
		{Hash: "x", Kind: TokenEnroll},
		{Hash: "x", Kind: TokenEnroll, Expires: t0, Name: ".bad"},
	} {
		if err := c.CreateToken(&bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CreateToken(%+v): %v, want ErrInvalid", bad, err)
		}
	}

	// Not found, expired, used.
	if _, err := c.UseToken("nope", t0, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("UseToken of unknown hash: %v, want ErrNotFound", err)
	}
	if _, err := c.UseToken("h2", t0.Add(time.Hour+1), "x"); !errors.Is(err, ErrTokenExpired) {
		t.Errorf("UseToken after expiry: %v, want ErrTokenExpired", err)
	}
	got, err := c.UseToken("h1", t0.Add(time.Hour), "192.0.2.7")
	must(t, err)
	want := *a
	want.Used, want.UsedBy = t0.Add(time.Hour), "192.0.2.7"
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("UseToken = %+v\nwant %+v", *got, want)
	}
	if _, err := c.UseToken("h1", t0, "other"); !errors.Is(err, ErrTokenUsed) {
		t.Errorf("UseToken twice: %v, want ErrTokenUsed", err)
	}
	// Used wins over expired.
	if _, err := c.UseToken("h1", t0.Add(48*time.Hour), "other"); !errors.Is(err, ErrTokenUsed) {
		t.Errorf("UseToken of a used, expired token: %v, want ErrTokenUsed", err)
	}
	if ErrTokenUsed.Error() != "token already used" || ErrTokenExpired.Error() != "token expired" {
		t.Errorf("sentinel messages %q, %q", ErrTokenUsed, ErrTokenExpired)
	}

	toks, err := c.Tokens()
	must(t, err)
	if len(toks) != 2 || !reflect.DeepEqual(*toks[0], want) || toks[1].ID != b.ID || !toks[1].Used.IsZero() {
		t.Errorf("Tokens = %+v, %+v", toks[0], toks[1])
	}
}

// Many goroutines, on two Catalogs of one file, spend the same token at
// once: exactly one wins, the others get ErrTokenUsed.
func TestUseTokenConcurrently(t *testing.T) { onBoth(t, testUseTokenConcurrently) }

func testUseTokenConcurrently(t *testing.T) {
	c, path := openTemp(t)
	c2, err := Open(path)
	must(t, err)
	defer c2.Close()
	for round := 0; round < 5; round++ {
		hash := fmt.Sprint("hash", round)
		must(t, c.CreateToken(&Token{Hash: hash, Kind: TokenEnroll, Expires: time.Now().Add(time.Hour)}))
		const n = 16
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cat := c
				if i%2 == 1 {
					cat = c2
				}
				<-start
				_, errs[i] = cat.UseToken(hash, time.Time{}, fmt.Sprint("g", i))
			}()
		}
		close(start)
		wg.Wait()
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, ErrTokenUsed):
				t.Errorf("round %d, goroutine %d: %v, want nil or ErrTokenUsed", round, i, err)
			}
		}
		if wins != 1 {
			t.Errorf("round %d: %d goroutines used the token, want 1", round, wins)
		}
	}
}

// TokenByHash reads a token without spending it.
func TestTokenByHash(t *testing.T) { onBoth(t, testTokenByHash) }

func testTokenByHash(t *testing.T) {
	c, _ := openTemp(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, c.CreateToken(&Token{Hash: "h1", Kind: TokenEnroll, Name: "db1", Created: t0, Expires: t0.Add(time.Hour)}))
	if _, err := c.TokenByHash("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TokenByHash of an unknown hash: %v, want ErrNotFound", err)
	}
	for range 2 {
		got, err := c.TokenByHash("h1")
		if err != nil || got.Name != "db1" || !got.Expires.Equal(t0.Add(time.Hour)) || !got.Used.IsZero() {
			t.Fatalf("TokenByHash = %+v, %v", got, err)
		}
	}
	if _, err := c.UseToken("h1", t0, "db1"); err != nil {
		t.Errorf("UseToken after TokenByHash: %v", err)
	}
	if got, err := c.TokenByHash("h1"); err != nil || got.Used.IsZero() || got.UsedBy != "db1" {
		t.Errorf("TokenByHash of a used token = %+v, %v", got, err)
	}
}
