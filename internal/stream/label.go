package stream

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/xxh3"
)

// LabelMagic is the magic of the zstd skippable frame holding a label
// (one of the 16 values zstd reserves, 0x184D2A50-5F; 0x184D2A5E is taken
// by the zstd seekable format, so Kura uses 5B). Permanent.
const LabelMagic uint32 = 0x184D2A5B

// LabelFormat and LabelVersion identify the label and stream format.
// The version only moves forward.
const (
	LabelFormat  = "kura-saveset"
	LabelVersion = 1
)

// MaxLabelSize caps the content of a label frame, written or read. A
// reader never allocates more than this for a label.
const MaxLabelSize = 1 << 20

const (
	labelTitle = "KURA SAVESET LABEL\n"
	labelBegin = "-----BEGIN KURA LABEL JSON-----\n"
	labelEnd   = "-----END KURA LABEL JSON xxh3="
	labelTail  = "-----\n"
)

// Label describes a saveset part; it is the first frame of every part.
type Label struct {
	Format      string    `json:"format"` // LabelFormat
	Version     int       `json:"version"`
	SavesetID   uint64    `json:"saveset_id"`
	JobID       uint64    `json:"job_id"`
	Client      string    `json:"client"`
	Host        string    `json:"host"`
	Selection   string    `json:"selection"`
	Paths       []string  `json:"paths"`
	Level       string    `json:"level"` // full, incremental, differential
	Base        uint64    `json:"base,omitempty"`
	Created     time.Time `json:"created"`
	Part        int       `json:"part"` // 0-based
	PrevBarcode string    `json:"prev_barcode,omitempty"`
	Codec       string    `json:"codec"`
	FrameSize   int       `json:"frame_size"`
	Label       string    `json:"label,omitempty"` // user text
}

// LabelFrame returns l as a zstd skippable frame. Format and Version are
// filled in when empty. The text holds a human summary, the JSON and the
// restore recipe for this file. If the label would exceed MaxLabelSize,
// Paths is cut short (the index keeps the full selection).
func LabelFrame(l Label) []byte {
	if l.Format == "" {
		l.Format = LabelFormat
	}
	if l.Version == 0 {
		l.Version = LabelVersion
	}
	for {
		b := labelContent(l)
		if len(b) <= MaxLabelSize || len(l.Paths) == 0 {
			out := make([]byte, 8, 8+len(b))
			binary.LittleEndian.PutUint32(out, LabelMagic)
			binary.LittleEndian.PutUint32(out[4:], uint32(len(b)))
			return append(out, b...)
		}
		l.Paths = l.Paths[:len(l.Paths)/2]
	}
}

func labelContent(l Label) []byte {
	js, err := json.Marshal(l)
	if err != nil {
		panic(err) // Label holds only marshalable fields
	}
	var b bytes.Buffer
	b.WriteString(labelTitle)
	fmt.Fprintf(&b, "Saveset %d (job %d), part %d, level %s, created %s\n",
		l.SavesetID, l.JobID, l.Part+1, printable(l.Level), l.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Client %s, host %s, selection %s\n", printable(l.Client), printable(l.Host), printable(l.Selection))
	if l.Label != "" {
		fmt.Fprintf(&b, "Label: %s\n", printable(l.Label))
	}
	b.WriteString("This file is a pax (POSIX tar) archive in zstd frames; this label is a zstd skippable frame.\n")
	WriteLabelJSON(&b, js)
	b.WriteString("To restore into the current directory with stock tools (save this tape file as FILE):\n")
	b.WriteString("  " + Recipe([]string{"FILE"}) + "\n")
	b.WriteString("If the saveset spans several tape files, name all parts in order after cat.\n")
	return b.Bytes()
}

// printable makes user-supplied text safe for the one-line human summary.
func printable(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// ReadLabelFrame reads one label frame from r. It reads exactly the frame
// (8 bytes plus the declared content) and no more, so r is left at the first
// data frame. Errors: ErrNotLabel, ErrLabelTooLarge, ErrLabelDamaged.
func ReadLabelFrame(r io.Reader) (Label, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			return Label{}, fmt.Errorf("%w: empty input", ErrNotLabel)
		}
		return Label{}, fmt.Errorf("%w: short header: %v", ErrNotLabel, err)
	}
	if m := binary.LittleEndian.Uint32(h[:]); m != LabelMagic {
		return Label{}, fmt.Errorf("%w: magic %#08x", ErrNotLabel, m)
	}
	n := binary.LittleEndian.Uint32(h[4:])
	if n > MaxLabelSize {
		return Label{}, fmt.Errorf("%w: %d bytes (max %d)", ErrLabelTooLarge, n, MaxLabelSize)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return Label{}, fmt.Errorf("%w: ends after %d bytes", ErrLabelDamaged, len(b))
	}
	return parseLabel(b)
}

// WriteLabelJSON writes js as a label's checksummed JSON block: between a
// BEGIN line and an END line that carries the XXH3 of the JSON. The saveset
// label and the catalog backup label share it.
func WriteLabelJSON(b *bytes.Buffer, js []byte) {
	b.WriteString(labelBegin)
	b.Write(js)
	b.WriteByte('\n')
	fmt.Fprintf(b, "%s%016x%s", labelEnd, xxh3.Hash(js), labelTail)
}

// LabelJSON finds the checksummed JSON block in a label's text and returns
// the JSON once its checksum matches. The error says what is wrong; callers
// wrap it in their own "label damaged" error.
func LabelJSON(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte(labelBegin))
	if i < 0 {
		return nil, errors.New("no JSON start")
	}
	rest := b[i+len(labelBegin):]
	j := bytes.Index(rest, []byte("\n"+labelEnd))
	if j < 0 {
		return nil, errors.New("no JSON end")
	}
	js := rest[:j]
	sum := rest[j+1+len(labelEnd):]
	if len(sum) < 16+len(labelTail) || string(sum[16:16+len(labelTail)]) != labelTail {
		return nil, errors.New("bad checksum line")
	}
	want, err := strconv.ParseUint(string(sum[:16]), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("bad checksum %q", sum[:16])
	}
	if got := xxh3.Hash(js); got != want {
		return nil, fmt.Errorf("checksum %016x, label says %016x", got, want)
	}
	return js, nil
}

func parseLabel(b []byte) (Label, error) {
	if !bytes.HasPrefix(b, []byte(labelTitle)) {
		return Label{}, fmt.Errorf("%w: no label title", ErrNotLabel)
	}
	js, err := LabelJSON(b)
	if err != nil {
		return Label{}, fmt.Errorf("%w: %v", ErrLabelDamaged, err)
	}
	var l Label
	if err := json.Unmarshal(js, &l); err != nil {
		return Label{}, fmt.Errorf("%w: %v", ErrLabelDamaged, err)
	}
	if l.Format != LabelFormat || l.Version < 1 {
		return Label{}, fmt.Errorf("%w: format %q version %d", ErrLabelDamaged, l.Format, l.Version)
	}
	return l, nil
}

// recipeTar is the tar command at the end of every Recipe.
const recipeTar = "tar --delay-directory-restore --xattrs --xattrs-include='*' -xpf -"

// Recipe returns a shell pipeline using only cat, zstd and GNU tar that
// restores the saveset stored in files (its parts, in order) into the
// current directory. --delay-directory-restore is needed because entries
// are in index order (a directory's children follow its siblings), so GNU
// tar would otherwise set a directory's mtime and mode before all its
// children exist (measured: wrong directory mtimes without it).
// --xattrs --xattrs-include='*' restores the SCHILY.xattr records of every
// namespace: without them GNU tar drops all extended attributes, file
// capabilities and the POSIX ACLs (stored as their raw system.posix_acl_*
// values) included; a user who may not set security.* or trusted.* gets a
// warning per attribute from tar and exit status 0. Paths are single-quoted
// when they hold anything but [A-Za-z0-9_./:@%+=,-]; a path starting with
// "-" is prefixed with "./".
func Recipe(files []string) string {
	if len(files) == 0 {
		files = []string{"FILE"}
	}
	q := make([]string, len(files))
	for i, f := range files {
		if strings.HasPrefix(f, "-") {
			f = "./" + f
		}
		q[i] = shellQuote(f)
	}
	return "cat " + strings.Join(q, " ") + " | zstd -dc | " + recipeTar
}

// AgeStage is the stage a recipe gets for an encrypted saveset, before
// zstd: the stock age tool with the keys of the client (an exported key
// ring, or the server's recovery key) in the file KURA_KEYS names.
const AgeStage = `age -d -i "${KURA_KEYS:?set KURA_KEYS to the file of kura agent key export, or the recovery key}"`

// Sealed is a recipe (Recipe, RecipeS3) for an encrypted saveset: the
// parts, concatenated, are one age file; decrypted, the saveset's stream.
func Sealed(recipe string) string {
	return strings.Replace(recipe, " | zstd -dc | ", " | "+AgeStage+" | zstd -dc | ", 1)
}

// RecipeS3 is Recipe for a saveset whose parts are objects in an
// S3-compatible store: each URL (the parts' chunk objects, in order)
// fetched with curl's own AWS signature v4 (curl 7.75 or later) for region,
// with the credentials of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and
// AWS_SESSION_TOKEN when set) in the user's environment (never in the
// recipe), concatenated into zstd and tar as Recipe does. A failed fetch
// stops the pipeline. The credentials reach curl as a config file on its
// standard input (`curl -K -`, written by the shell's printf builtin), not
// as arguments, which any user on the machine could read in ps.
func RecipeS3(urls []string, region string) string {
	q := make([]string, len(urls))
	for i, u := range urls {
		q[i] = shellQuote(u)
	}
	return "for u in " + strings.Join(q, " ") + "; do " +
		`{ printf 'user = "%s:%s"\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"; ` +
		`[ -z "$AWS_SESSION_TOKEN" ] || printf 'header = "x-amz-security-token: %s"\n' "$AWS_SESSION_TOKEN"; } | ` +
		"curl -sSf -K - --aws-sigv4 " + shellQuote("aws:amz:"+region+":s3") +
		` -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$u" || exit 1; done | zstd -dc | ` + recipeTar
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_./:@%+=,-", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
