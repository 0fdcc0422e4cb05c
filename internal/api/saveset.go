package api

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kura-backup/kura/internal/rules"
)

// SavesetService is the savesets and what is in them: /savesets.
type SavesetService interface {
	// Savesets lists the savesets the query keeps, oldest first, whatever
	// their status (expired ones included).
	Savesets(ctx context.Context, q SavesetQuery) ([]SavesetInfo, error)
	// Saveset is one saveset.
	Saveset(ctx context.Context, id int64) (*SavesetInfo, error)
	// Retention says for each saveset the query keeps whether retention
	// keeps or expires it now, and which rule decided.
	Retention(ctx context.Context, q SavesetQuery) ([]RetentionDecision, error)
	// Recipe is the shell pipeline (cat, zstd, tar) that restores a
	// saveset without Kura.
	Recipe(ctx context.Context, id int64) (*Recipe, error)
	// Entries is one page of the listing of a folder of a saveset.
	Entries(ctx context.Context, q EntriesQuery) (*EntryPage, error)
	// Find is one page of the versions of the paths that match a pattern,
	// in every complete saveset.
	Find(ctx context.Context, q FindQuery) (*MatchPage, error)
}

func init() {
	wireTypes = append(wireTypes, SavesetInfo{}, RetentionDecision{}, Recipe{}, EntryPage{}, MatchPage{})
}

// SavesetQuery says which savesets to list (GET /savesets and
// /savesets/retention): every field that is set must match.
type SavesetQuery struct {
	Client    string `json:"client,omitempty"`
	Selection string `json:"selection,omitempty"`
	Tape      string `json:"tape,omitempty"`   // a barcode the saveset has a part on
	Status    string `json:"status,omitempty"` // complete, running, failed, incomplete
}

// SavesetCopy is a further copy of a saveset's tape files (kura copy).
type SavesetCopy struct {
	Copy      int       `json:"copy"`
	Library   string    `json:"library"`
	Created   time.Time `json:"created"`
	Parts     []Part    `json:"parts"`
	IndexPart *Part     `json:"index_part,omitempty"`
}

// SavesetInfo is a saveset as `kura savesets --json` prints it
// (docs/schema/saveset.json). It has every key of Saveset, the record an
// agent reads, and the ratio and tapes a listing shows.
type SavesetInfo struct {
	ID           int64         `json:"id"`
	JobID        int64         `json:"job_id"`
	Client       string        `json:"client"`
	Selection    string        `json:"selection"`
	Policy       string        `json:"policy"`
	Level        string        `json:"level"`
	BaseID       int64         `json:"base_id"`
	Status       string        `json:"status"`
	Created      time.Time     `json:"created"`
	Finished     *time.Time    `json:"finished,omitempty"`
	Paths        []string      `json:"paths"`
	Label        string        `json:"label"`
	Files        int64         `json:"files"`
	SourceBytes  int64         `json:"source_bytes"`
	MediaBytes   int64         `json:"media_bytes"`
	Ratio        float64       `json:"ratio"`
	RatioText    string        `json:"ratio_text"`
	Codec        string        `json:"codec"`
	Library      string        `json:"library"`
	Tapes        []string      `json:"tapes"`
	Parts        []Part        `json:"parts"`
	IndexPart    *Part         `json:"index_part,omitempty"`
	IndexBytes   int64         `json:"index_bytes"`
	IndexEntries int64         `json:"index_entries"`
	Expired      bool          `json:"expired"`
	ExpireReason string        `json:"expire_reason,omitempty"`
	Copies       []SavesetCopy `json:"copies"`
	Encryption   string        `json:"encryption,omitempty"` // "age": data and index encrypted by the client's agent
}

// RetentionDecision is retention's verdict on a saveset (`kura savesets
// --why --json`, `kura prune --json`).
type RetentionDecision struct {
	ID         int64     `json:"id"`
	Keep       bool      `json:"keep"`
	Rule       string    `json:"rule"`   // e.g. keep-generations, already-expired
	Reason     string    `json:"reason"` // in words
	Generation int       `json:"generation"`
	Policy     string    `json:"policy"`
	Client     string    `json:"client"`
	Level      string    `json:"level"`
	Status     string    `json:"status"`
	Created    time.Time `json:"created"`
}

// Recipe is `kura saveset recipe --json`.
type Recipe struct {
	SavesetID int64  `json:"saveset_id"`
	Recipe    string `json:"recipe"` // the shell pipeline
}

// MaxPageLimit bounds the entries of one page of a listing; a limit of 0
// is DefaultPageLimit.
const (
	DefaultPageLimit = 1000
	MaxPageLimit     = 10000
)

// EntriesQuery asks for a page of the listing of a folder of a saveset
// (GET /savesets/{id}/entries?path=&cursor=&limit=).
type EntriesQuery struct {
	SavesetID int64  `json:"saveset_id"`
	Path      string `json:"path,omitempty"`   // the folder; "" or "/" is the top
	Cursor    string `json:"cursor,omitempty"` // the next of the page before; "" for the first page
	Limit     int    `json:"limit,omitempty"`  // entries a page at most; 0 is DefaultPageLimit
}

// FindQuery asks for a page of a search
// (GET /savesets/find?pattern=&client=&newest_first=&cursor=&limit=).
// A pattern with * ? or [ is a glob matched against the whole path and
// the base name; otherwise it matches any path that contains it. Client
// searches one client's savesets only; NewestFirst searches the newest
// saveset first (the console's "which backups hold this file").
type FindQuery struct {
	Pattern     string `json:"pattern"`
	Client      string `json:"client,omitempty"`
	NewestFirst bool   `json:"newest_first,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// Entry is a file, folder or link of a saveset's index (`kura ls --json`).
type Entry struct {
	Path   string `json:"path"` // absolute
	Type   string `json:"type"` // file, dir, symlink, hardlink, fifo, char, block
	Mode   string `json:"mode"` // permission bits in octal, e.g. "0644"
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Size   int64  `json:"size_bytes"`
	MTime  string `json:"mtime"` // RFC 3339, UTC, with nanoseconds
	Link   string `json:"link,omitempty"`
	Source int64  `json:"data_in_saveset,omitempty"` // an unchanged file: the saveset that holds its data
	Digest string `json:"digest,omitempty"`
	// Sparse: a file with holes, stored as its data alone (Size is its
	// logical size) and restored with its holes.
	Sparse bool `json:"sparse,omitempty"`
	// A path or link that is not valid UTF-8 does not survive JSON (its
	// bytes become U+FFFD in Path and Link): its bytes are here too.
	// FilePath and LinkTarget give the real ones.
	PathBytes []byte `json:"path_bytes,omitempty"`
	LinkBytes []byte `json:"link_bytes,omitempty"`
}

// SetNames sets Path and Link, and their bytes when they are not valid
// UTF-8 (Path and Link then hold U+FFFD for each bad byte, as JSON would
// make of them anyway).
func (e *Entry) SetNames(path, link string) {
	e.Path, e.Link, e.PathBytes, e.LinkBytes = path, link, nil, nil
	if !utf8.ValidString(path) {
		e.Path, e.PathBytes = strings.ToValidUTF8(path, "\uFFFD"), []byte(path)
	}
	if !utf8.ValidString(link) {
		e.Link, e.LinkBytes = strings.ToValidUTF8(link, "\uFFFD"), []byte(link)
	}
}

// FilePath is the entry's path, bytes and all.
func (e *Entry) FilePath() string {
	if e.PathBytes != nil {
		return string(e.PathBytes)
	}
	return e.Path
}

// LinkTarget is the entry's symlink or hard link target, bytes and all.
func (e *Entry) LinkTarget() string {
	if e.LinkBytes != nil {
		return string(e.LinkBytes)
	}
	return e.Link
}

// Match is one version of a path that a search found (`kura find --json`).
// Its keys are in alphabetical order, as the CLI has always printed them.
type Match struct {
	Created   string `json:"created"` // the saveset's
	Entry     Entry  `json:"entry"`
	Level     string `json:"level"`
	SavesetID int64  `json:"saveset_id"`
}

// Skipped is the invalid entries of a saveset's damaged or hostile index
// that a page passed over: how many, and the first few named. The CLI
// adds them up over the pages and exits 3 (warnings).
type Skipped struct {
	SavesetID int64    `json:"saveset_id"`
	Count     int      `json:"count"`
	Examples  []string `json:"examples"`
}

// EntryPage is a page of a listing. Next is the cursor of the page after
// it; "" when this is the last.
type EntryPage struct {
	Entries []Entry   `json:"entries"`
	Next    string    `json:"next,omitempty"`
	Skipped []Skipped `json:"skipped"`
	// Notices are warnings that change nothing of the answer, e.g. a
	// damaged cached index rebuilt from tape; the CLI prints them as
	// "warning: …".
	Notices []string `json:"notices"`
}

// MatchPage is a page of a search.
type MatchPage struct {
	Matches []Match   `json:"matches"`
	Next    string    `json:"next,omitempty"`
	Skipped []Skipped `json:"skipped"`
	Notices []string  `json:"notices"`
}

// Validate checks a listing's page.
func (q *EntriesQuery) Validate() error {
	if q.SavesetID <= 0 {
		return bad("saveset_id", "must be a saveset ID")
	}
	return pageLimit(q.Limit)
}

// Validate checks a search's page (an empty pattern matches every path).
func (q *FindQuery) Validate() error {
	if q.Client != "" {
		if err := rules.ClientName(q.Client); err != nil {
			return bad("client", "%v", err)
		}
	}
	return pageLimit(q.Limit)
}

func pageLimit(n int) error {
	if n < 0 || n > MaxPageLimit {
		return bad("limit", "must be between 1 and %d (0: %d)", MaxPageLimit, DefaultPageLimit)
	}
	return nil
}
