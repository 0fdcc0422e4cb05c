package catalog

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Selection is a named backup selection set of one client: the paths to back
// up and the patterns to leave out, or the commands and plug-ins whose
// output to store.
type Selection struct {
	Name     string
	Client   string // "" is the local machine
	Paths    []string
	Excludes []string
	Sources  []Source
	Created  time.Time // set to now by CreateSelection when zero
}

// Source is a command or plug-in of a selection set (plugin.Source).
type Source struct {
	Kind         string   `json:"kind"`
	Command      string   `json:"command,omitempty"`
	Name         string   `json:"name,omitempty"`
	Databases    []string `json:"databases,omitempty"`
	AllDatabases bool     `json:"all_databases,omitempty"`
}

// CreateSelection records a selection set. ErrExists if the client already
// has one by that name.
func (c *Catalog) CreateSelection(s Selection) error {
	if s.Name == "" {
		return fmt.Errorf("catalog: selection needs a name: %w", ErrInvalid)
	}
	if s.Created.IsZero() {
		s.Created = now()
	}
	paths, err := encodeList(s.Paths)
	if err != nil {
		return fmt.Errorf("catalog: selection %q: %w", s.Name, err)
	}
	excludes, err := encodeList(s.Excludes)
	if err != nil {
		return fmt.Errorf("catalog: selection %q: %w", s.Name, err)
	}
	sources := ""
	if len(s.Sources) > 0 {
		if sources, err = encodeList(s.Sources); err != nil {
			return fmt.Errorf("catalog: selection %q: %w", s.Name, err)
		}
	}
	_, err = c.db.Exec(`INSERT INTO selections (client, name, paths, excludes, sources, created) VALUES (?, ?, ?, ?, ?, ?)`,
		s.Client, s.Name, paths, excludes, sources, toDB(s.Created))
	if isDuplicate(err) {
		return fmt.Errorf("catalog: selection %q of client %q: %w", s.Name, s.Client, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: creating selection %q: %w", s.Name, err)
	}
	return nil
}

const selectionColumns = `client, name, paths, excludes, sources, created`

func scanSelection(row interface{ Scan(...any) error }) (Selection, error) {
	var s Selection
	var paths, excludes, sources string
	var created sql.NullInt64
	if err := row.Scan(&s.Client, &s.Name, &paths, &excludes, &sources, &created); err != nil {
		return Selection{}, err
	}
	var err error
	if s.Paths, err = decodeList[string](paths, "paths"); err != nil {
		return Selection{}, err
	}
	if s.Excludes, err = decodeList[string](excludes, "excludes"); err != nil {
		return Selection{}, err
	}
	if s.Sources, err = decodeList[Source](sources, "sources"); err != nil {
		return Selection{}, err
	}
	s.Created = fromDB(created)
	return s, nil
}

// Selection returns a client's selection set by name, or ErrNotFound.
func (c *Catalog) Selection(client, name string) (Selection, error) {
	s, err := scanSelection(c.db.QueryRow(`SELECT `+selectionColumns+` FROM selections WHERE client = ? AND name = ?`, client, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Selection{}, fmt.Errorf("catalog: selection %q of client %q: %w", name, client, ErrNotFound)
	}
	if err != nil {
		return Selection{}, fmt.Errorf("catalog: selection %q: %w", name, err)
	}
	return s, nil
}

// Selections lists a client's selection sets by name.
func (c *Catalog) Selections(client string) ([]Selection, error) {
	rows, err := c.db.Query(`SELECT `+selectionColumns+` FROM selections WHERE client = ? ORDER BY name`, client)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing selections: %w", err)
	}
	defer rows.Close()
	var out []Selection
	for rows.Next() {
		s, err := scanSelection(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: listing selections: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: listing selections: %w", err)
	}
	return out, nil
}

// RemoveSelection deletes a client's selection set, or returns ErrNotFound.
// Savesets made from it keep its name.
func (c *Catalog) RemoveSelection(client, name string) error {
	err := execOne(c.db, fmt.Sprintf("selection %q of client %q", name, client),
		`DELETE FROM selections WHERE client = ? AND name = ?`, client, name)
	if err != nil {
		return fmt.Errorf("catalog: removing selection: %w", err)
	}
	return nil
}
