package api

import (
	"context"
	"time"
)

// CatalogCopyService finds the catalog's own backups on tape:
// GET /catalog/backups.
type CatalogCopyService interface {
	// CatalogCopies lists the catalog backups on the tapes of library
	// folders (none given: every library in the home's vtl folder), newest
	// first, reading the media alone: it needs no catalog.
	CatalogCopies(ctx context.Context, dirs []string) (*CatalogCopies, error)
}

func init() { wireTypes = append(wireTypes, CatalogCopies{}) }

// CatalogCopies are the catalog backups found, and notes about what could
// not be searched (an exported tape).
type CatalogCopies struct {
	Copies []CatalogCopy `json:"copies"`
	Notes  []string      `json:"notes"`
}

// CatalogCopy is one catalog backup found on a tape.
type CatalogCopy struct {
	Library    string        `json:"library"`
	LibraryDir string        `json:"library_dir"`
	Barcode    string        `json:"barcode"`
	File       int           `json:"file"`
	Written    time.Time     `json:"written"`         // the tape file's filemark
	Bytes      int64         `json:"bytes"`           // of the tape file
	Label      *CatalogLabel `json:"label,omitempty"` // left out when unreadable
	Error      string        `json:"error,omitempty"` // why it cannot be used
}

// CatalogLabel is the label of a catalog backup, as on the tape
// (docs/design.md, "Policies, retention, pools, copies and the catalog's own backup").
type CatalogLabel struct {
	Format        string           `json:"format"`
	Version       int              `json:"version"`
	Created       time.Time        `json:"created"` // when the snapshot was taken
	SchemaVersion int              `json:"schema_version"`
	Savesets      int              `json:"savesets"` // saveset records in the snapshot, any status
	LastSavesetID int64            `json:"last_saveset_id"`
	JobID         int64            `json:"job_id,omitempty"` // the catalog backup's own job
	Host          string           `json:"host,omitempty"`
	Libraries     []CatalogLibrary `json:"libraries,omitempty"`
	Size          int64            `json:"size"`   // bytes of the database
	SHA256        string           `json:"sha256"` // of the database, lower-case hex
}

// CatalogLibrary is a library a catalog backup's catalog records.
type CatalogLibrary struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
}
