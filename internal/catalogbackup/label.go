package catalogbackup

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kura-backup/kura/internal/stream"
)

// Magic is the magic of the zstd skippable frame holding the label: Kura's
// label frame magic (stream.LabelMagic), one of the 16 values zstd reserves
// for skippable frames. Permanent.
const Magic uint32 = 0x184D2A5B

// Format and Version identify the label and the file format. The version
// only moves forward.
const (
	Format  = "kura-catalog"
	Version = 1
)

// MaxLabelSize caps the content of a label frame, written or read: a reader
// never allocates more than this for a label.
const MaxLabelSize = 1 << 20

// Sentinel errors; test with errors.Is.
var (
	// ErrNotBackup: the bytes are not a catalog backup (a saveset part or
	// index, another skippable frame, anything else).
	ErrNotBackup = errors.New("catalogbackup: not a catalog backup")
	// ErrLabelDamaged: a catalog backup label whose text, checksum or JSON
	// is broken, that is too large, or that ends early.
	ErrLabelDamaged = errors.New("catalogbackup: label damaged")
	// ErrUnsupported: written by a newer Kura (a format version this
	// program does not know).
	ErrUnsupported = errors.New("catalogbackup: unsupported version")
	// ErrCorrupt: the database does not match its label: a zstd frame
	// fails its checksum, or the size or SHA-256 differ.
	ErrCorrupt = errors.New("catalogbackup: corrupt")
	// ErrTruncated: the file ends before the database does.
	ErrTruncated = errors.New("catalogbackup: truncated")
	// ErrClosed: the Writer or Reader was closed.
	ErrClosed = errors.New("catalogbackup: closed")
	// ErrInvalid: a Writer was given a label it cannot write, or data that
	// does not match the label's size and SHA-256.
	ErrInvalid = errors.New("catalogbackup: invalid")
)

// labelTitle starts the label's text; the JSON block after it is the
// saveset label's (stream.WriteLabelJSON).
const labelTitle = "KURA CATALOG BACKUP\n"

// Library is a library the catalog knows, as it was when the backup was
// taken: a restore matches it with the library folders it finds.
type Library struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
}

// Label describes a catalog backup; it is the first frame of the file.
type Label struct {
	Format        string    `json:"format"` // Format
	Version       int       `json:"version"`
	Created       time.Time `json:"created"` // when the snapshot was taken
	SchemaVersion int       `json:"schema_version"`
	Savesets      int       `json:"savesets"` // saveset records in the snapshot, any status
	LastSavesetID int64     `json:"last_saveset_id"`
	JobID         int64     `json:"job_id,omitempty"` // the catalog backup's own job
	Host          string    `json:"host,omitempty"`
	Libraries     []Library `json:"libraries,omitempty"`
	Size          int64     `json:"size"`   // bytes of the database
	SHA256        string    `json:"sha256"` // of the database, lower-case hex
}

func (l Label) validate() error {
	switch {
	case l.Format != Format:
		return fmt.Errorf("format %q", l.Format)
	case l.Version < 1:
		return fmt.Errorf("version %d", l.Version)
	case l.Size < 0:
		return fmt.Errorf("size %d", l.Size)
	}
	if b, err := hex.DecodeString(l.SHA256); err != nil || len(b) != 32 || hex.EncodeToString(b) != l.SHA256 {
		return fmt.Errorf("sha256 %q", l.SHA256)
	}
	return nil
}

// LabelFrame returns l as a zstd skippable frame. Format and Version are
// filled in when empty. It fails with ErrInvalid on a label that would not
// read back (no SHA-256, negative size, over MaxLabelSize).
func LabelFrame(l Label) ([]byte, error) {
	if l.Format == "" {
		l.Format = Format
	}
	if l.Version == 0 {
		l.Version = Version
	}
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("%w: label: %v", ErrInvalid, err)
	}
	b, err := labelContent(l)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxLabelSize {
		return nil, fmt.Errorf("%w: label of %d bytes (max %d)", ErrInvalid, len(b), MaxLabelSize)
	}
	out := make([]byte, 8, 8+len(b))
	binary.LittleEndian.PutUint32(out, Magic)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(b)))
	return append(out, b...), nil
}

func labelContent(l Label) ([]byte, error) {
	js, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("%w: label: %v", ErrInvalid, err)
	}
	var b bytes.Buffer
	b.WriteString(labelTitle)
	fmt.Fprintf(&b, "Catalog of host %s, taken %s: %d savesets (last ID %d), schema version %d, %d bytes\n",
		printable(l.Host), l.Created.UTC().Format(time.RFC3339), l.Savesets, l.LastSavesetID, l.SchemaVersion, l.Size)
	b.WriteString("This file is Kura's catalog (an SQLite database) in zstd frames; this label is a zstd skippable frame.\n")
	stream.WriteLabelJSON(&b, js)
	b.WriteString("To restore it: kura catalog restore (docs/operations.md). With stock tools (save this tape file as FILE):\n")
	b.WriteString("  zstd -dc FILE > catalog.db && sha256sum catalog.db   # must print the sha256 above\n")
	return b.Bytes(), nil
}

// printable makes text safe for the one-line human summary.
func printable(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// ReadLabel reads the label frame at the start of r. It reads exactly the
// frame (8 bytes and the declared content, after checking that length), so
// r is left at the first zstd frame. A tape file that is something else
// fails with ErrNotBackup; a damaged label with ErrLabelDamaged; a newer
// version with ErrUnsupported. Errors of r itself are returned wrapped.
func ReadLabel(r io.Reader) (Label, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Label{}, fmt.Errorf("%w: shorter than a label header", ErrNotBackup)
		}
		return Label{}, fmt.Errorf("catalogbackup: reading the label: %w", err)
	}
	if m := binary.LittleEndian.Uint32(h[:]); m != Magic {
		return Label{}, fmt.Errorf("%w: magic %#08x", ErrNotBackup, m)
	}
	n := binary.LittleEndian.Uint32(h[4:])
	// The title comes first: read it before trusting the length, so that a
	// saveset label is told apart without reading all of it.
	title := make([]byte, min(int(n), len(labelTitle)))
	if _, err := io.ReadFull(r, title); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Label{}, fmt.Errorf("%w: label frame ends early", ErrNotBackup)
		}
		return Label{}, fmt.Errorf("catalogbackup: reading the label: %w", err)
	}
	if string(title) != labelTitle {
		return Label{}, fmt.Errorf("%w: another kind of label", ErrNotBackup)
	}
	if n > MaxLabelSize {
		return Label{}, fmt.Errorf("%w: %d bytes (max %d)", ErrLabelDamaged, n, MaxLabelSize)
	}
	b := make([]byte, int(n)-len(labelTitle))
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Label{}, fmt.Errorf("%w: ends early", ErrLabelDamaged)
		}
		return Label{}, fmt.Errorf("catalogbackup: reading the label: %w", err)
	}
	return parseLabel(b)
}

// parseLabel parses the label content after its title.
func parseLabel(b []byte) (Label, error) {
	js, err := stream.LabelJSON(b)
	if err != nil {
		return Label{}, fmt.Errorf("%w: %v", ErrLabelDamaged, err)
	}
	var l Label
	if err := json.Unmarshal(js, &l); err != nil {
		return Label{}, fmt.Errorf("%w: %v", ErrLabelDamaged, err)
	}
	if l.Format == Format && l.Version > Version {
		return Label{}, fmt.Errorf("%w: format version %d (this program reads up to %d)", ErrUnsupported, l.Version, Version)
	}
	if err := l.validate(); err != nil {
		return Label{}, fmt.Errorf("%w: %v", ErrLabelDamaged, err)
	}
	return l, nil
}
