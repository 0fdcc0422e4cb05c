package catalog

import (
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/rules"
)

// Saveset levels.
const (
	LevelFull = rules.LevelFull
	LevelIncr = rules.LevelIncr // relative to the newest complete saveset of any level
	LevelDiff = rules.LevelDiff // relative to the newest complete full
)

// Saveset statuses.
const (
	StatusRunning    = "running"
	StatusComplete   = "complete" // data and index durable on media
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// Part is one tape file holding a piece of a saveset.
type Part struct {
	Barcode string `json:"barcode"`
	File    int    `json:"file"`  // tape file number on that tape
	Bytes   int64  `json:"bytes"` // bytes of the saveset in that tape file
}

// Saveset is one backup of one selection of one client, written to one or
// more tape files (Parts, in stream order) plus an index tape file.
type Saveset struct {
	ID           int64     `json:"id"`
	JobID        int64     `json:"job_id"`
	Client       string    `json:"client"` // "" is the local machine
	Selection    string    `json:"selection"`
	Level        string    `json:"level"`   // LevelFull, LevelIncr or LevelDiff
	BaseID       int64     `json:"base_id"` // the saveset this one is relative to; 0 for a full
	Status       string    `json:"status"`  // StatusRunning, StatusComplete, StatusIncomplete or StatusFailed
	Created      time.Time `json:"created"`
	Finished     time.Time `json:"finished"`
	Paths        []string  `json:"paths"`
	Label        string    `json:"label"`
	Files        int64     `json:"files"`
	SourceBytes  int64     `json:"source_bytes"`
	MediaBytes   int64     `json:"media_bytes"`
	Codec        string    `json:"codec"`
	Library      string    `json:"library"`
	Parts        []Part    `json:"parts"`
	IndexPart    Part      `json:"index_part"` // the index tape file; Barcode "" while not written
	IndexBytes   int64     `json:"index_bytes"`
	IndexEntries int64     `json:"index_entries"`
	Expired      bool      `json:"expired"`
	// Policy names the policy whose run made the saveset ("" = an ad-hoc
	// backup, which retention never expires).
	Policy       string `json:"policy,omitempty"`
	ExpireReason string `json:"expire_reason,omitempty"` // why it expired (retention's reason)
	// Copies are further copies of the saveset on other libraries (kura
	// copy); a restore reads whichever copy is available.
	Copies []Copy `json:"copies,omitempty"`
	// Encryption is how the data and the index on tape are encrypted: ""
	// (not at all) or "age" (by the client's agent; seal.Scheme).
	Encryption string `json:"encryption,omitempty"`
}

// Copy is a second (third …) copy of a saveset's tape files.
type Copy struct {
	Copy      int       `json:"copy"` // 1, 2, …
	Library   string    `json:"library"`
	Created   time.Time `json:"created"`
	Parts     []Part    `json:"parts"`
	IndexPart Part      `json:"index_part"`
}

func (s *Saveset) validate() error {
	if s.ID < 0 {
		return fmt.Errorf("catalog: saveset ID %d: %w", s.ID, ErrInvalid)
	}
	if !oneOf(s.Level, LevelFull, LevelIncr, LevelDiff) {
		return fmt.Errorf("catalog: saveset level %q: %w", s.Level, ErrInvalid)
	}
	if !oneOf(s.Status, StatusRunning, StatusComplete, StatusIncomplete, StatusFailed) {
		return fmt.Errorf("catalog: saveset status %q: %w", s.Status, ErrInvalid)
	}
	for _, p := range s.Parts {
		if p.Barcode == "" {
			return fmt.Errorf("catalog: saveset part without a barcode: %w", ErrInvalid)
		}
	}
	return nil
}

// savesetColumns are the savesets columns after id, in the order of
// savesetArgs and scanSaveset.
const savesetColumns = `job_id, client, selection, level, base_id, status, created, finished, paths, label,
	files, source_bytes, media_bytes, codec, library, index_bytes, index_entries, expired, policy, expire_reason, encryption`

func savesetArgs(s *Saveset) ([]any, error) {
	paths, err := encodeList(s.Paths)
	if err != nil {
		return nil, err
	}
	return []any{s.JobID, s.Client, s.Selection, s.Level, s.BaseID, s.Status, toDB(s.Created), toDB(s.Finished),
		paths, s.Label, s.Files, s.SourceBytes, s.MediaBytes, s.Codec, s.Library, s.IndexBytes, s.IndexEntries,
		s.Expired, s.Policy, s.ExpireReason, s.Encryption}, nil
}

// Part kinds in saveset_parts.
const (
	partData  = "data"
	partIndex = "index"
)

func insertParts(tx *txn, s *Saveset) error {
	const q = `INSERT INTO saveset_parts (saveset_id, kind, seq, barcode, file, bytes) VALUES (?, ?, ?, ?, ?, ?)`
	for i, p := range s.Parts {
		if _, err := tx.Exec(q, s.ID, partData, i, p.Barcode, p.File, p.Bytes); err != nil {
			return err
		}
	}
	if s.IndexPart.Barcode != "" {
		p := s.IndexPart
		if _, err := tx.Exec(q, s.ID, partIndex, 0, p.Barcode, p.File, p.Bytes); err != nil {
			return err
		}
	}
	for _, c := range s.Copies {
		if c.Copy <= 0 || c.Library == "" {
			return fmt.Errorf("saveset %d: copy %d without a number or library: %w", s.ID, c.Copy, ErrInvalid)
		}
		if _, err := tx.Exec(`INSERT INTO saveset_copies (saveset_id, copy, library, created) VALUES (?, ?, ?, ?)`,
			s.ID, c.Copy, c.Library, toDB(c.Created)); err != nil {
			return err
		}
		for i, p := range c.Parts {
			if _, err := tx.Exec(q, s.ID, copyKind(c.Copy, partData), i, p.Barcode, p.File, p.Bytes); err != nil {
				return err
			}
		}
		if p := c.IndexPart; p.Barcode != "" {
			if _, err := tx.Exec(q, s.ID, copyKind(c.Copy, partIndex), 0, p.Barcode, p.File, p.Bytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyKind is the saveset_parts kind of a copy's parts: "copy2-data".
func copyKind(n int, kind string) string { return fmt.Sprintf("copy%d-%s", n, kind) }

// CreateSaveset records a new saveset. When s.ID is 0 the catalog assigns the
// next free ID and stores it in s; otherwise s.ID is used as given (a tape
// scan rebuilds savesets with their original IDs) and ErrExists is returned
// if it is taken. A zero Created is set to now.
func (c *Catalog) CreateSaveset(s *Saveset) error {
	return c.createSaveset(s, nil, "")
}

// CreateJobSaveset is CreateSaveset for the running job j, leased by
// holder: in the same transaction j.SavesetID is set to the new saveset and
// j is written as UpdateLeasedJob writes it (ErrLeaseLost, and nothing
// written, if holder does not hold the job's lease). A backup's saveset and
// its job's record of it cost one commit.
func (c *Catalog) CreateJobSaveset(s *Saveset, j *Job, holder string) error {
	if j == nil {
		return fmt.Errorf("catalog: no job: %w", ErrInvalid)
	}
	if err := j.validate(); err != nil {
		return err
	}
	if finalState(j.State) {
		return fmt.Errorf("catalog: job %d: %s is final: %w", j.ID, j.State, ErrInvalid)
	}
	return c.createSaveset(s, j, holder)
}

func (c *Catalog) createSaveset(s *Saveset, j *Job, holder string) error {
	if err := s.validate(); err != nil {
		return err
	}
	rec := *s
	if rec.Created.IsZero() {
		rec.Created = now()
	}
	args, err := savesetArgs(&rec)
	if err != nil {
		return fmt.Errorf("catalog: creating saveset: %w", err)
	}
	jobSaveset := int64(0)
	if j != nil {
		jobSaveset = j.SavesetID
	}
	err = c.write(func(tx *txn) error {
		if j != nil {
			if _, err := holdsTx(tx, j.ID, holder); err != nil {
				return err
			}
		}
		q := `INSERT INTO savesets (` + savesetColumns + `) VALUES (` + placeholders(savesetColumns) + `) RETURNING id`
		if s.ID != 0 {
			q = `INSERT INTO savesets (id, ` + savesetColumns + `) VALUES (?, ` + placeholders(savesetColumns) + `) RETURNING id`
			args = append([]any{s.ID}, args...)
		}
		if err := tx.QueryRow(q, args...).Scan(&rec.ID); err != nil {
			return err
		}
		if err := tx.d.raiseSequence(tx, "savesets", s.ID); err != nil {
			return err
		}
		if err := insertParts(tx, &rec); err != nil {
			return err
		}
		if j != nil {
			j.SavesetID = rec.ID
			return updateJobTx(tx, j)
		}
		return nil
	})
	if err != nil && j != nil {
		j.SavesetID = jobSaveset // nothing was written
	}
	if isDuplicate(err) {
		return fmt.Errorf("catalog: saveset %d: %w", s.ID, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("catalog: creating saveset: %w", err)
	}
	s.ID, s.Created = rec.ID, rec.Created
	return nil
}

// UpdateSaveset replaces every field of the saveset s.ID, parts included, or
// returns ErrNotFound.
func (c *Catalog) UpdateSaveset(s *Saveset) error {
	if err := s.validate(); err != nil {
		return err
	}
	args, err := savesetArgs(s)
	if err != nil {
		return fmt.Errorf("catalog: updating saveset %d: %w", s.ID, err)
	}
	err = c.write(func(tx *txn) error {
		if err := execOne(tx, fmt.Sprintf("saveset %d", s.ID),
			`UPDATE savesets SET `+assignments(savesetColumns)+` WHERE id = ?`, append(args, s.ID)...); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM saveset_parts WHERE saveset_id = ?`, s.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM saveset_copies WHERE saveset_id = ?`, s.ID); err != nil {
			return err
		}
		return insertParts(tx, s)
	})
	if err != nil {
		return fmt.Errorf("catalog: updating saveset: %w", err)
	}
	return nil
}

// Saveset returns the saveset with this ID, or ErrNotFound.
func (c *Catalog) Saveset(id int64) (*Saveset, error) {
	ss, err := c.querySavesets(`s.id = ?`, []any{id})
	if err != nil {
		return nil, fmt.Errorf("catalog: saveset %d: %w", id, err)
	}
	if len(ss) == 0 {
		return nil, fmt.Errorf("catalog: saveset %d: %w", id, ErrNotFound)
	}
	return ss[0], nil
}

// SavesetFilter selects savesets. Every field narrows the result; the zero
// filter selects all savesets. List fields match any of their values, so
// Clients: []string{""} selects the local machine's savesets while a nil
// Clients selects every client's.
type SavesetFilter struct {
	Clients    []string
	Selections []string
	Statuses   []string
	Levels     []string
	Library    string    // savesets written to this library; "" for any
	Barcode    string    // savesets with a data part or their index on this tape; "" for any
	After      time.Time // Created at or after this time; zero for no bound
	Before     time.Time // Created strictly before this time; zero for no bound
}

// where renders the filter as a condition on savesets s.
func (f SavesetFilter) where() (string, []any) {
	var conds []string
	var args []any
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		conds = append(conds, col+` IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ")+`)`)
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("s.client", f.Clients)
	in("s.selection", f.Selections)
	in("s.status", f.Statuses)
	in("s.level", f.Levels)
	if f.Library != "" {
		conds = append(conds, `s.library = ?`)
		args = append(args, f.Library)
	}
	if f.Barcode != "" {
		conds = append(conds, `s.id IN (SELECT b.saveset_id FROM saveset_parts b WHERE b.barcode = ?)`)
		args = append(args, f.Barcode)
	}
	if !f.After.IsZero() {
		conds = append(conds, `s.created >= ?`)
		args = append(args, f.After.UnixNano())
	}
	if !f.Before.IsZero() {
		conds = append(conds, `s.created < ?`)
		args = append(args, f.Before.UnixNano())
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

// Savesets returns the savesets that match f, ordered by ID.
func (c *Catalog) Savesets(f SavesetFilter) ([]*Saveset, error) {
	where, args := f.where()
	ss, err := c.querySavesets(where, args)
	if err != nil {
		return nil, fmt.Errorf("catalog: listing savesets: %w", err)
	}
	return ss, nil
}

// LastSaveset returns the newest complete, unexpired saveset of a client's
// selection whose level is one of levels (any level when levels is empty) and
// that was created strictly before before (no bound when zero): the base of
// an incremental (any level) or a differential (LevelFull), or the saveset to
// restore for --latest or --at. "Newest" is by Created, then by ID.
// An empty selection means any selection of the client (--latest without
// --selection). ErrNotFound when there is none.
func (c *Catalog) LastSaveset(client, selection string, levels []string, before time.Time) (*Saveset, error) {
	f := SavesetFilter{
		Clients:  []string{client},
		Statuses: []string{StatusComplete},
		Levels:   levels,
		Before:   before,
	}
	if selection != "" {
		f.Selections = []string{selection}
	}
	where, args := f.where()
	// The newest one is chosen in a subquery so that the parts join below
	// does not need a LIMIT on a joined result.
	where = `s.id = (SELECT s.id FROM savesets s WHERE ` + where +
		` AND s.expired = ? ORDER BY s.created DESC, s.id DESC LIMIT 1)`
	args = append(args, false)
	ss, err := c.querySavesets(where, args)
	if err != nil {
		return nil, fmt.Errorf("catalog: last saveset of %q/%q: %w", client, selection, err)
	}
	if len(ss) == 0 {
		return nil, fmt.Errorf("catalog: no complete saveset of selection %q of client %q: %w", selection, client, ErrNotFound)
	}
	return ss[0], nil
}

// DeleteSaveset removes a saveset and its parts, or returns ErrNotFound. Its
// ID is never given out again.
func (c *Catalog) DeleteSaveset(id int64) error {
	err := c.write(func(tx *txn) error {
		if _, err := tx.Exec(`DELETE FROM saveset_parts WHERE saveset_id = ?`, id); err != nil {
			return err
		}
		return execOne(tx, fmt.Sprintf("saveset %d", id), `DELETE FROM savesets WHERE id = ?`, id)
	})
	if err != nil {
		return fmt.Errorf("catalog: deleting saveset: %w", err)
	}
	return nil
}

// ReserveSavesetIDs makes sure the catalog never gives out a saveset ID at
// or below max: the IDs that tapes already hold when their library is
// registered in a catalog that does not know their savesets (a lost
// catalog, or one restored from an older catalog backup). The sequence
// behind the key is raised; it never goes down.
func (c *Catalog) ReserveSavesetIDs(max int64) error {
	if max <= 0 {
		return nil
	}
	err := c.write(func(tx *txn) error {
		return tx.d.raiseSequence(tx, "savesets", max)
	})
	if err != nil {
		return fmt.Errorf("catalog: reserving saveset IDs up to %d: %w", max, err)
	}
	return nil
}

// savesetsQuery selects the savesets s matching where, each joined with its
// parts, in ID order.
func savesetsQuery(where string) string {
	return `SELECT s.id, ` + prefixColumns("s.", savesetColumns) + `,
			p.kind, p.seq, p.barcode, p.file, p.bytes
		FROM savesets s LEFT JOIN saveset_parts p ON p.saveset_id = s.id
		WHERE ` + where + `
		ORDER BY s.id, p.kind, p.seq`
}

// querySavesets loads the savesets s matching where, with their parts, in
// one statement so that a saveset and its parts are read consistently.
func (c *Catalog) querySavesets(where string, args []any) ([]*Saveset, error) {
	q := savesetsQuery(where)
	rows, err := c.db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Saveset
	for rows.Next() {
		var (
			s                 Saveset
			created, finished sql.NullInt64
			paths             string
			kind, barcode     sql.NullString
			seq, file, bytes  sql.NullInt64
		)
		err := rows.Scan(&s.ID, &s.JobID, &s.Client, &s.Selection, &s.Level, &s.BaseID, &s.Status,
			&created, &finished, &paths, &s.Label, &s.Files, &s.SourceBytes, &s.MediaBytes, &s.Codec,
			&s.Library, &s.IndexBytes, &s.IndexEntries, &s.Expired, &s.Policy, &s.ExpireReason, &s.Encryption,
			&kind, &seq, &barcode, &file, &bytes)
		if err != nil {
			return nil, err
		}
		cur := &s
		if n := len(out); n > 0 && out[n-1].ID == s.ID {
			cur = out[n-1]
		} else {
			s.Created, s.Finished = fromDB(created), fromDB(finished)
			if s.Paths, err = decodeList[string](paths, "saveset paths"); err != nil {
				return nil, err
			}
			out = append(out, cur)
		}
		if !kind.Valid {
			continue // no parts
		}
		p := Part{Barcode: barcode.String, File: int(file.Int64), Bytes: bytes.Int64}
		switch kind.String {
		case partData:
			cur.Parts = append(cur.Parts, p)
		case partIndex:
			cur.IndexPart = p
		default:
			var n int
			var what string
			if _, err := fmt.Sscanf(kind.String, "copy%d-%s", &n, &what); err != nil || n <= 0 {
				return nil, fmt.Errorf("saveset %d: unknown part kind %q", s.ID, kind.String)
			}
			c := cur.copy(n)
			switch what {
			case partData:
				c.Parts = append(c.Parts, p)
			case partIndex:
				c.IndexPart = p
			default:
				return nil, fmt.Errorf("saveset %d: unknown part kind %q", s.ID, kind.String)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, c.loadCopies(out, where, args)
}

// copy returns the saveset's copy n, adding it if needed.
func (s *Saveset) copy(n int) *Copy {
	for i := range s.Copies {
		if s.Copies[i].Copy == n {
			return &s.Copies[i]
		}
	}
	s.Copies = append(s.Copies, Copy{Copy: n})
	return &s.Copies[len(s.Copies)-1]
}

// loadCopies fills in the library and time of the copies of sets.
func (c *Catalog) loadCopies(sets []*Saveset, where string, args []any) error {
	has := false
	for _, s := range sets {
		has = has || len(s.Copies) > 0
	}
	if !has {
		return nil
	}
	byID := map[int64]*Saveset{}
	for _, s := range sets {
		byID[s.ID] = s
	}
	rows, err := c.db.Query(`SELECT c.saveset_id, c.copy, c.library, c.created FROM saveset_copies c
		JOIN savesets s ON s.id = c.saveset_id WHERE `+where, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      int64
			n       int
			lib     string
			created sql.NullInt64
		)
		if err := rows.Scan(&id, &n, &lib, &created); err != nil {
			return err
		}
		if s := byID[id]; s != nil {
			cp := s.copy(n)
			cp.Library, cp.Created = lib, fromDB(created)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range sets {
		sort.Slice(s.Copies, func(i, j int) bool { return s.Copies[i].Copy < s.Copies[j].Copy })
	}
	return nil
}

// ExpireSaveset marks a saveset expired, with the reason retention gave.
func (c *Catalog) ExpireSaveset(id int64, reason string) error {
	return c.write(func(tx *txn) error {
		return execOne(tx, fmt.Sprintf("saveset %d", id),
			`UPDATE savesets SET expired = 1, expire_reason = ? WHERE id = ?`, reason, id)
	})
}

// prefixColumns qualifies each column of a comma-separated list.
func prefixColumns(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// LiveSavesetsByTape returns, for every tape that holds a part (data or
// index, of the saveset or of a copy) of a complete or running saveset
// that has not expired, the IDs of those savesets in ascending order: what
// Savesets with a Barcode filter and those statuses gives for each tape
// (less the expired ones), in one query instead of one per tape.
func (c *Catalog) LiveSavesetsByTape() (map[string][]int64, error) {
	rows, err := c.db.Query(`SELECT DISTINCT p.barcode, s.id FROM saveset_parts p
		JOIN savesets s ON s.id = p.saveset_id
		WHERE s.status IN (?, ?) AND s.expired = ? ORDER BY s.id`, StatusComplete, StatusRunning, false)
	if err != nil {
		return nil, fmt.Errorf("catalog: live savesets by tape: %w", err)
	}
	defer rows.Close()
	out := map[string][]int64{}
	for rows.Next() {
		var bc string
		var id int64
		if err := rows.Scan(&bc, &id); err != nil {
			return nil, fmt.Errorf("catalog: live savesets by tape: %w", err)
		}
		out[bc] = append(out[bc], id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: live savesets by tape: %w", err)
	}
	return out, nil
}
