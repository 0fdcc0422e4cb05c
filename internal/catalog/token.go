package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Token kinds.
const (
	TokenEnroll = "enroll" // lets one agent enroll, once
	TokenNode   = "node"   // lets one storage node enroll, once
)

// Errors returned by UseToken, to be tested with errors.Is.
var (
	// ErrTokenUsed: the token was used already; every token is good once.
	ErrTokenUsed = errors.New("token already used")
	// ErrTokenExpired: the token's time is past.
	ErrTokenExpired = errors.New("token expired")
)

// Token is a one-time secret the server hands out, for instance to enroll
// an agent. The catalog keeps only a hash of the secret, never the secret.
type Token struct {
	ID      int64     `json:"id"`
	Hash    string    `json:"hash"` // hash of the secret, as the caller computes it
	Kind    string    `json:"kind"` // TokenEnroll or TokenNode
	Name    string    `json:"name"` // client the token is for; "" for any
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Used    time.Time `json:"used"` // zero until UseToken
	UsedBy  string    `json:"used_by"`
}

const tokenColumns = `hash, kind, name, created, expires, used, used_by`

func scanToken(row interface{ Scan(...any) error }) (*Token, error) {
	var (
		t                      Token
		created, expires, used sql.NullInt64
	)
	if err := row.Scan(&t.ID, &t.Hash, &t.Kind, &t.Name, &created, &expires, &used, &t.UsedBy); err != nil {
		return nil, err
	}
	t.Created, t.Expires, t.Used = fromDB(created), fromDB(expires), fromDB(used)
	return &t, nil
}

// CreateToken records a new token and sets t.ID to the ID the catalog gives
// it (any ID already in t is ignored), and t.Created to now when zero. The
// hash, a known kind and an expiry time are required, and Name, when set,
// must pass ValidClientName (ErrInvalid); a hash already recorded is
// ErrExists.
func (c *Catalog) CreateToken(t *Token) error {
	switch {
	case t.Hash == "":
		return fmt.Errorf("catalog: token without a hash: %w", ErrInvalid)
	case !oneOf(t.Kind, TokenEnroll, TokenNode):
		return fmt.Errorf("catalog: token kind %q: %w", t.Kind, ErrInvalid)
	case t.Expires.IsZero():
		return fmt.Errorf("catalog: token without an expiry time: %w", ErrInvalid)
	}
	if t.Name != "" {
		if err := ValidClientName(t.Name); err != nil {
			return fmt.Errorf("catalog: token: %w", err)
		}
	}
	if t.Created.IsZero() {
		t.Created = now()
	}
	var id int64
	err := c.write(func(tx *txn) error {
		return tx.QueryRow(`INSERT INTO tokens (`+tokenColumns+`) VALUES (`+placeholders(tokenColumns)+`) RETURNING id`,
			t.Hash, t.Kind, t.Name, toDB(t.Created), toDB(t.Expires), toDB(t.Used), t.UsedBy).Scan(&id)
	})
	if isDuplicate(err) {
		return fmt.Errorf("catalog: token: %w", ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: creating token: %w", err)
	}
	t.ID = id
	return nil
}

// TokenByHash returns the token with this hash without using it
// (ErrNotFound if there is none), so a caller can check a token before it
// does anything that could still refuse the request.
func (c *Catalog) TokenByHash(hash string) (*Token, error) {
	t, err := scanToken(c.db.QueryRow(`SELECT id, `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("catalog: token: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: reading token: %w", err)
	}
	return t, nil
}

// UseToken spends the token with this hash: it records it used at time at
// (now when zero) by by, and returns it. ErrNotFound if there is no such
// token, ErrTokenUsed if it was used already, ErrTokenExpired if at is after
// its expiry time. The checks and the update are one write transaction. Of any number of concurrent calls for one token, in
// this process or another, exactly one succeeds.
func (c *Catalog) UseToken(hash string, at time.Time, by string) (*Token, error) {
	if at.IsZero() {
		at = now()
	}
	var t *Token
	err := c.write(func(tx *txn) error {
		var err error
		t, err = scanToken(tx.QueryRow(`SELECT id, `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		case !t.Used.IsZero():
			return ErrTokenUsed
		case at.After(t.Expires):
			return ErrTokenExpired
		}
		// The write transaction already excludes other writers; the used IS
		// NULL condition keeps this true on a database that isolates less.
		res, err := tx.Exec(`UPDATE tokens SET used = ?, used_by = ? WHERE id = ? AND used IS NULL`,
			toDB(at), by, t.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return ErrTokenUsed
		}
		t.Used, t.UsedBy = fromDB(toDB(at)), by
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: using token: %w", err)
	}
	return t, nil
}

// Tokens lists every token, used and expired ones included, oldest (lowest
// ID) first.
func (c *Catalog) Tokens() ([]*Token, error) {
	rows, err := c.db.Query(`SELECT id, ` + tokenColumns + ` FROM tokens ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing tokens: %w", err)
	}
	defer rows.Close()
	var out []*Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing tokens: %w", err)
	}
	return out, nil
}
