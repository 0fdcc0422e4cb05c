package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Library is a virtual tape library known to the catalog: a name and the
// folder that holds it. A library on a storage node has the node's name in
// Node, and Dir is its folder on that node (the server never opens it).
type Library struct {
	Name    string
	Dir     string
	Created time.Time // set to now by AddLibrary when zero
	Node    string    // "" for a library of the server's own
}

// AddLibrary records a library. ErrExists if the name is taken.
func (c *Catalog) AddLibrary(l Library) error {
	if l.Name == "" || l.Dir == "" {
		return fmt.Errorf("catalog: library needs a name and a folder: %w", ErrInvalid)
	}
	if l.Created.IsZero() {
		l.Created = now()
	}
	_, err := c.db.Exec(`INSERT INTO libraries (name, dir, created, node) VALUES (?, ?, ?, ?)`,
		l.Name, l.Dir, toDB(l.Created), l.Node)
	if isDuplicate(err) {
		return fmt.Errorf("catalog: library %q: %w", l.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: adding library %q: %w", l.Name, err)
	}
	return nil
}

// Libraries lists the libraries by name.
func (c *Catalog) Libraries() ([]Library, error) {
	rows, err := c.db.Query(`SELECT name, dir, created, node FROM libraries ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing libraries: %w", err)
	}
	defer rows.Close()
	var out []Library
	for rows.Next() {
		var l Library
		var created sql.NullInt64
		if err := rows.Scan(&l.Name, &l.Dir, &created, &l.Node); err != nil {
			return nil, fmt.Errorf("catalog: listing libraries: %w", err)
		}
		l.Created = fromDB(created)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing libraries: %w", err)
	}
	return out, nil
}

// Library returns the named library, or ErrNotFound.
func (c *Catalog) Library(name string) (Library, error) {
	l := Library{Name: name}
	var created sql.NullInt64
	err := c.db.QueryRow(`SELECT dir, created, node FROM libraries WHERE name = ?`, name).Scan(&l.Dir, &created, &l.Node)
	if errors.Is(err, sql.ErrNoRows) {
		return Library{}, fmt.Errorf("catalog: library %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Library{}, fmt.Errorf("catalog: library %q: %w", name, err)
	}
	l.Created = fromDB(created)
	return l, nil
}

// RemoveLibrary forgets a library. ErrNotFound if there is none by that name,
// ErrInUse while the catalog still places tapes in it.
func (c *Catalog) RemoveLibrary(name string) error {
	err := execOne(c.db, "library "+quote(name), `DELETE FROM libraries WHERE name = ?`, name)
	if isForeignKey(err) {
		return fmt.Errorf("catalog: library %q still holds tapes: %w", name, ErrInUse)
	}
	if err != nil {
		return fmt.Errorf("catalog: removing library: %w", err)
	}
	return nil
}

// AddTape records that the tape with this barcode lives in library.
// ErrExists if the barcode is already known (in any library), ErrNotFound if
// the library is not.
func (c *Catalog) AddTape(barcode, library string) error {
	if barcode == "" {
		return fmt.Errorf("catalog: tape needs a barcode: %w", ErrInvalid)
	}
	_, err := c.db.Exec(`INSERT INTO tapes (barcode, library) VALUES (?, ?)`, barcode, library)
	switch {
	case isDuplicate(err):
		return fmt.Errorf("catalog: tape %q: %w", barcode, ErrExists)
	case isForeignKey(err):
		return fmt.Errorf("catalog: tape %q: library %q: %w", barcode, library, ErrNotFound)
	case err != nil:
		return fmt.Errorf("catalog: adding tape %q: %w", barcode, err)
	}
	return nil
}

// TapeLibrary returns the name of the library holding the tape, or
// ErrNotFound.
func (c *Catalog) TapeLibrary(barcode string) (string, error) {
	var lib string
	err := c.db.QueryRow(`SELECT library FROM tapes WHERE barcode = ?`, barcode).Scan(&lib)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("catalog: tape %q: %w", barcode, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("catalog: tape %q: %w", barcode, err)
	}
	return lib, nil
}

// RemoveTape forgets a tape, or returns ErrNotFound. Savesets that refer to
// the tape are left alone.
func (c *Catalog) RemoveTape(barcode string) error {
	if err := execOne(c.db, "tape "+quote(barcode), `DELETE FROM tapes WHERE barcode = ?`, barcode); err != nil {
		return fmt.Errorf("catalog: removing tape: %w", err)
	}
	return nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
