package tape

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/units"
)

// Describe draws the tape's layout as a tree (`kura tape show`): the label,
// each tape file with its filemark, and the end of data. A damaged copy of
// the label is named under the label. A damaged filemark
// is drawn where it is found and ends the listing.
//
//	tape A00001L
//	├── label
//	│   ├── barcode: A00001L
//	│   ...
//	├── file 1: complete
//	│   ├── tag: "saveset 12 data part 1"
//	│   ...
//	├── filemark
//	└── end of data: used 1.00 MiB (1048576 bytes) of 10.0 GiB (0.0%)
func Describe(w io.Writer, t *Tape) error {
	files, ferr := t.Files()
	return DescribeLayout(w, t.Label(), t.LabelDamage(), files, ferr)
}

// DescribeLayout draws what Describe draws from what was read off a tape:
// its label, what is wrong with a copy of the label (nil: nothing), its
// tape files and why the files stop where they do (nil: end of data).
func DescribeLayout(w io.Writer, l Label, damage error, files []FileInfo, ferr error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "tape %s\n", l.Barcode)
	node := func(last bool, format string, a ...any) {
		branch := "├── "
		if last {
			branch = "└── "
		}
		fmt.Fprintf(&b, "%s%s\n", branch, fmt.Sprintf(format, a...))
	}
	leaves := func(kv [][2]string) {
		for i, e := range kv {
			branch := "│   ├── "
			if i == len(kv)-1 {
				branch = "│   └── "
			}
			fmt.Fprintf(&b, "%s%s: %s\n", branch, e[0], e[1])
		}
	}
	node(false, "label")
	kv := [][2]string{}
	if damage != nil {
		kv = append(kv, [2]string{"DAMAGED", damage.Error()})
	}
	leaves(append(kv, [][2]string{
		{"barcode", l.Barcode},
		{"library", l.Library},
		{"block size", size(int64(l.BlockSize))},
		{"capacity", size(l.Capacity)},
		{"early warning", size(l.EarlyWarning)},
		{"generation", fmt.Sprintf("%d (created %s, labelled %s)", l.Generation, stamp(l.Created), stamp(l.Labelled))},
	}...))
	var used int64
	for _, f := range files {
		used += f.Bytes
		node(false, "file %d: %s", f.Number, f.Status)
		kv := [][2]string{}
		if f.Tag != "" {
			kv = append(kv, [2]string{"tag", fmt.Sprintf("%q", f.Tag)})
		}
		kv = append(kv,
			[2]string{"bytes", size(f.Bytes)},
			[2]string{"blocks", fmt.Sprintf("%d × %s", f.Blocks, units.FormatSize(int64(f.BlockSize)))},
		)
		if f.Status == FileComplete {
			kv = append(kv, [2]string{"crc table", fmt.Sprintf("%08x", f.CRCTable)})
		}
		kv = append(kv, [2]string{"written", stamp(f.Written)})
		leaves(kv)
		if f.Status == FileComplete {
			node(false, "filemark")
		} else {
			node(false, "(no filemark: truncated by the next append)")
		}
	}
	if ferr != nil {
		node(false, "error: %v", ferr)
	}
	pct := 0.0
	if l.Capacity > 0 {
		pct = 100 * float64(used) / float64(l.Capacity)
	}
	node(true, "end of data: used %s of %s (%.1f%%)", size(used), units.FormatSize(l.Capacity), pct)
	_, err := io.WriteString(w, b.String())
	return err
}

func size(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%s (%d bytes)", units.FormatSize(n), n)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
