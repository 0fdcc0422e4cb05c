package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/stream"
	"github.com/kura-backup/kura/internal/tape"
)

// hEntry is one entry of a hostile saveset: what the index says (e) and what
// the stream says (tarPath, content), and how the index lies about it.
type hEntry struct {
	e         index.Entry
	tarPath   string // "" = e.Path
	content   string
	idxSize   int64 // >0: the index claims this size instead
	badDigest bool  // the index holds a wrong digest
}

// hostileCase is a saveset an attacker (or a broken writer) made, following
// docs/design.md: the stream, the frame table and the index are chosen.
type hostileCase struct {
	name    string
	hostile bool // a faithful restore is impossible: some command must say so
	entries func(d *trialDir) []hEntry
	// patch replaces, in the finished index file, each key by its value (same
	// length) in every block and in the block directory: this is how paths
	// the index writer refuses (.., absolute, NUL) get into an index.
	patch  func(d *trialDir) map[string]string
	frames func(f []index.Frame) // lie in the frame table
	want   map[string]string     // the files a faithful restore yields (path → content)
}

const okFile, okContent = "a-ok.txt", "an honest file\n"

func file(p, content string) hEntry {
	return hEntry{e: index.Entry{Path: p, Type: index.TypeFile, Mode: 0o644, MTime: time.Unix(1700000000, 0).UnixNano()}, content: content}
}

func entryOf(p string, typ index.Type, link string) hEntry {
	return hEntry{e: index.Entry{Path: p, Type: typ, Mode: 0o755, MTime: time.Unix(1700000000, 0).UnixNano(), Link: link}}
}

// placeholder is a valid relative path as long as s, ending in s's last
// component, for patching to s.
func placeholder(s string) string {
	base := filepath.Base(s)
	return strings.Repeat("Q", len(s)-len(base)-1) + "/" + base
}

var hostileCases = []hostileCase{
	{name: "stream-dotdot: the stream says ../../../evil where the index says evil", hostile: true,
		entries: func(d *trialDir) []hEntry {
			e := file("evil", "escaped via the stream\n")
			e.tarPath = "../../../evil"
			return []hEntry{file(okFile, okContent), e}
		}},
	{name: "index-dotdot: index and stream both say ../../../evil1", hostile: true,
		entries: func(d *trialDir) []hEntry {
			e := file(placeholder("../../../evil1"), "escaped via the index\n")
			e.tarPath = "../../../evil1"
			return []hEntry{file(okFile, okContent), e}
		},
		patch: func(d *trialDir) map[string]string {
			return map[string]string{placeholder("../../../evil1"): "../../../evil1"}
		}},
	{name: "index-absolute: index and stream name an absolute path in the sentinel folder", hostile: true,
		entries: func(d *trialDir) []hEntry {
			// The stream writer refuses an absolute name, so the stream
			// keeps the placeholder and only the index is patched.
			abs := filepath.Join(d.sent, "abs1")
			return []hEntry{file(okFile, okContent), file(placeholder(abs), "absolute\n")}
		},
		patch: func(d *trialDir) map[string]string {
			abs := filepath.Join(d.sent, "abs1")
			return map[string]string{placeholder(abs): abs}
		}},
	{name: "symlink-abs-then-file: link → the sentinel folder, then link/pwned", hostile: true,
		entries: func(d *trialDir) []hEntry {
			return []hEntry{file(okFile, okContent), entryOf("link", index.TypeSymlink, d.sent), file("link/pwned", "through an absolute link\n")}
		}},
	{name: "symlink-rel-then-file: rel → ../../.., then rel/pwned2", hostile: true,
		entries: func(d *trialDir) []hEntry {
			return []hEntry{file(okFile, okContent), entryOf("rel", index.TypeSymlink, "../../.."), file("rel/pwned2", "through a relative link\n")}
		}},
	{name: "symlink-then-dir: s → the sentinel folder, then s/sub/ and s/sub/pwned3", hostile: true,
		entries: func(d *trialDir) []hEntry {
			return []hEntry{file(okFile, okContent), entryOf("s", index.TypeSymlink, d.sent), entryOf("s/sub", index.TypeDir, ""), file("s/sub/pwned3", "through a link to a dir\n")}
		}},
	{name: "hardlink-out: a hard link to the canary outside the target", hostile: true,
		entries: func(d *trialDir) []hEntry {
			return []hEntry{file(okFile, okContent), entryOf("hl", index.TypeHardlink, filepath.Join(d.sent, "canary")), entryOf("hl2", index.TypeHardlink, "../../../canary")}
		}},
	{name: "nul-name: an index path with a NUL byte", hostile: true,
		entries: func(d *trialDir) []hEntry {
			return []hEntry{file(okFile, okContent), file("nulQname", "nul\n")}
		},
		patch: func(d *trialDir) map[string]string { return map[string]string{"nulQname": "nul\x00name"} }},
	{name: "huge-name: a 300-byte name (over NAME_MAX)", hostile: true,
		entries: func(d *trialDir) []hEntry {
			return []hEntry{file(okFile, okContent), file("h"+strings.Repeat("x", 299), "long name\n")}
		}},
	{name: "deep-tree: 3000 nested folders with a file at the bottom (a legal saveset; a linear restore takes well under a second)",
		entries: func(d *trialDir) []hEntry {
			out := []hEntry{file(okFile, okContent)}
			p := ""
			for range 3000 {
				p += "d/"
				out = append(out, entryOf(strings.TrimSuffix(p, "/"), index.TypeDir, ""))
			}
			return append(out, file(p+"bottom", "deep\n"))
		},
		want: map[string]string{okFile: okContent, strings.Repeat("d/", 3000) + "bottom": "deep\n"}},
	{name: "huge-size: the index says 1 TiB where the stream holds 10 bytes", hostile: true,
		entries: func(d *trialDir) []hEntry {
			e := file("big", "ten bytes!")
			e.idxSize = 1 << 40
			return []hEntry{file(okFile, okContent), e}
		}},
	{name: "lying-size: the index says 5 bytes where the stream holds 10", hostile: true,
		entries: func(d *trialDir) []hEntry {
			e := file("short", "ten bytes!")
			e.idxSize = 5
			return []hEntry{file(okFile, okContent), e}
		}},
	{name: "lying-digest: the index holds a wrong digest", hostile: true,
		entries: func(d *trialDir) []hEntry {
			e := file("digest", "content\n")
			e.badDigest = true
			return []hEntry{file(okFile, okContent), e}
		}},
	// The frame table lies but the stream and the entries are intact: a
	// restore either says so or restores both files exactly.
	{name: "lying-frames: the frame table gives the first frame 1 MiB more compressed bytes",
		entries: func(d *trialDir) []hEntry { return []hEntry{file(okFile, okContent), file("b", "b\n")} },
		frames:  func(f []index.Frame) { f[0].CSize += 1 << 20 },
		want:    map[string]string{okFile: okContent, "b": "b\n"}},
	{name: "lying-frame-offset: the frame table says the stream starts 512 bytes later",
		entries: func(d *trialDir) []hEntry { return []hEntry{file(okFile, okContent), file("b", "b\n")} },
		frames:  func(f []index.Frame) { f[0].Offset += 512 },
		want:    map[string]string{okFile: okContent, "b": "b\n"}},
	{name: "huge-frame: the frame table claims a 4 GiB frame",
		entries: func(d *trialDir) []hEntry { return []hEntry{file(okFile, okContent), file("b", "b\n")} },
		frames:  func(f []index.Frame) { f[len(f)-1].Size = 1<<32 - 1 },
		want:    map[string]string{okFile: okContent, "b": "b\n"}},
}

// memSink keeps the frames of a stream in memory, after the label.
type memSink struct{ buf bytes.Buffer }

func (m *memSink) WriteFrame(p []byte) (stream.Location, error) {
	loc := stream.Location{Part: 0, Offset: int64(m.buf.Len())}
	m.buf.Write(p)
	return loc, nil
}

// craftHostile writes case hc as saveset id on tape barcode of the home's
// default library: a data tape file (label frame + the stream) and an index
// tape file carrying the final meta that `kura tape scan` turns into a
// catalog record.
func craftHostile(d *trialDir, hc hostileCase, id int64, barcode string) error {
	entries := hc.entries(d)
	slices.SortFunc(entries, func(a, b hEntry) int { return index.Compare(a.e.Path, b.e.Path) })
	sink := &memSink{}
	sink.buf.Write(stream.LabelFrame(stream.Label{Format: stream.LabelFormat, Version: stream.LabelVersion, SavesetID: uint64(id), Level: "full", Created: time.Now().UTC()}))
	sw, err := stream.NewWriter(sink, stream.Options{})
	if err != nil {
		return err
	}
	var idx []index.Entry
	for _, h := range entries {
		e := h.e
		if h.tarPath != "" {
			e.Path = h.tarPath
		}
		e.Size = int64(len(h.content))
		if err := sw.WriteEntry(&e, strings.NewReader(h.content)); err != nil {
			return fmt.Errorf("stream %q: %w", e.Path, err)
		}
		ie := h.e
		ie.Size, ie.Offset, ie.Digest = e.Size, e.Offset, e.Digest
		if h.idxSize > 0 {
			ie.Size = h.idxSize
		}
		if h.badDigest {
			ie.Digest[0] ^= 0xff
		}
		idx = append(idx, ie)
	}
	frames, err := sw.Close()
	if err != nil {
		return err
	}
	if hc.frames != nil {
		hc.frames(frames)
	}
	tp, err := tape.Open(filepath.Join(d.home, "vtl", "default", "tapes", barcode), tape.Options{})
	if err != nil {
		return err
	}
	defer tp.Close()
	fw, err := tp.Append(fmt.Sprintf("saveset %d data part 1", id))
	if err != nil {
		return err
	}
	if _, err := fw.Write(sink.buf.Bytes()); err != nil {
		return err
	}
	data, err := fw.Finish()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	meta, _ := json.Marshal(struct {
		Saveset catalog.Saveset `json:"saveset"`
		Host    string          `json:"host"`
	}{Saveset: catalog.Saveset{ID: id, JobID: id, Selection: "hostile", Level: "full", Status: "complete", Created: now, Finished: now,
		Paths: []string{"/hostile"}, Files: int64(len(idx)), Codec: "auto", Library: "default", IndexEntries: int64(len(idx)),
		Parts: []catalog.Part{{Barcode: barcode, File: data.Number, Bytes: data.Bytes}}}, Host: "hostile"})
	var ib bytes.Buffer
	iw := index.NewWriter(&ib, nil)
	for i := range idx {
		if err := iw.Add(&idx[i]); err != nil {
			return fmt.Errorf("index %q: %w", idx[i].Path, err)
		}
	}
	iw.SetFrames(frames)
	if err := iw.SetMeta(meta); err != nil {
		return err
	}
	if err := iw.Close(); err != nil {
		return err
	}
	ixb := ib.Bytes()
	if hc.patch != nil {
		if ixb, err = patchIndex(ixb, hc.patch(d)); err != nil {
			return err
		}
	}
	fw, err = tp.Append(fmt.Sprintf("saveset %d index", id))
	if err != nil {
		return err
	}
	if _, err := fw.Write(ixb); err != nil {
		return err
	}
	_, err = fw.Finish()
	return err
}

// patchIndex rewrites an index file (docs/design.md, "The index file") with
// every key of repl replaced by its value in each block's raw payload and in
// the block directory's first paths, recomputing lengths and CRCs, so that
// the result is a well-formed index holding what the writer would refuse.
// Every key must be found.
func patchIndex(b []byte, repl map[string]string) ([]byte, error) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	if len(b) < 12+48 || string(b[:7]) != "KURAIDX" {
		return nil, errors.New("patch: not an index")
	}
	ft := b[len(b)-48:]
	tOff := binary.LittleEndian.Uint64(ft[0:])
	tLen := binary.LittleEndian.Uint64(ft[8:])
	nBlocks := binary.LittleEndian.Uint32(ft[24:])
	hdrEnd := 12 + int(binary.LittleEndian.Uint32(b[8:])) + 4
	found := map[string]bool{}
	apply := func(p []byte) []byte {
		for k, v := range repl {
			if len(k) != len(v) {
				panic("patch: " + k + " and its replacement differ in length")
			}
			if bytes.Contains(p, []byte(k)) {
				found[k] = true
				p = bytes.ReplaceAll(p, []byte(k), []byte(v))
			}
		}
		return p
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	out := append([]byte{}, b[:hdrEnd]...)
	var lens []int
	pos := hdrEnd
	for range nBlocks {
		s := int(binary.LittleEndian.Uint32(b[pos:]))
		raw, err := dec.DecodeAll(b[pos+16:pos+16+s], nil)
		if err != nil {
			return nil, fmt.Errorf("patch: block at %d: %w", pos, err)
		}
		raw = apply(raw)
		blk := make([]byte, 16)
		blk = enc.EncodeAll(raw, blk)
		binary.LittleEndian.PutUint32(blk[0:], uint32(len(blk)-16))
		copy(blk[4:12], b[pos+4:pos+12])
		binary.LittleEndian.PutUint32(blk[12:], crc32.Update(crc32.Checksum(blk[:12], castagnoli), castagnoli, blk[16:]))
		out = append(out, blk...)
		lens = append(lens, len(blk))
		pos += 16 + s
	}
	if uint64(pos) != tOff {
		return nil, fmt.Errorf("patch: blocks end at %d, trailer at %d", pos, tOff)
	}
	newTOff := len(out)
	tr := b[tOff : tOff+tLen]
	var t []byte
	prevOld, prevNew := "", ""
	for i := range nBlocks {
		_, n1 := binary.Uvarint(tr)
		tr = tr[n1:]
		cnt, n2 := binary.Uvarint(tr)
		tr = tr[n2:]
		shared, n3 := binary.Uvarint(tr)
		tr = tr[n3:]
		rl, n4 := binary.Uvarint(tr)
		tr = tr[n4:]
		first := prevOld[:shared] + string(tr[:rl])
		tr = tr[rl:]
		nf := string(apply([]byte(first)))
		s := 0
		for s < len(nf) && s < len(prevNew) && nf[s] == prevNew[s] {
			s++
		}
		t = binary.AppendUvarint(t, uint64(lens[i]))
		t = binary.AppendUvarint(t, cnt)
		t = binary.AppendUvarint(t, uint64(s))
		t = binary.AppendUvarint(t, uint64(len(nf)-s))
		t = append(t, nf[s:]...)
		prevOld, prevNew = first, nf
	}
	t = append(t, tr...) // the frame table and the final meta, unchanged
	for k := range repl {
		if !found[k] {
			return nil, fmt.Errorf("patch: %q not found in the index", k)
		}
	}
	out = append(out, t...)
	var f [48]byte
	copy(f[:], ft)
	binary.LittleEndian.PutUint64(f[0:], uint64(newTOff))
	binary.LittleEndian.PutUint64(f[8:], uint64(len(t)))
	binary.LittleEndian.PutUint32(f[32:], crc32.Checksum(t, castagnoli))
	binary.LittleEndian.PutUint32(f[36:], crc32.Checksum(f[:36], castagnoli))
	return append(out, f[:]...), nil
}

// hostileFault crafts one case as saveset 900+ on the blank tape KUR002,
// scans the tape, restores and verifies the saveset.
func (c *campaign) hostileFault(t *Trial, d *trialDir, hc hostileCase) {
	t.Fault = hc.name
	if err := copyTree(c.golden, d.home); err != nil {
		t.Outcome, t.Detail = Skipped, err.Error()
		return
	}
	id := int64(900 + c.trialNo)
	if err := craftHostile(d, hc, id, "KUR002"); err != nil {
		t.Outcome, t.Detail = Skipped, "craft: "+err.Error()
		return
	}
	reported := false
	to := d.target("target-hostile")
	for _, args := range [][]string{{"tape", "scan", "KUR002"}, {"restore", fmt.Sprint(id), "--to", to}, {"verify", fmt.Sprint(id)}} {
		r := c.kuraCmd(t, d.home, nil, args...)
		if r.Exit == -1 {
			t.Outcome = Hang
			return
		}
		if r.Exit != 0 {
			reported = true
		}
	}
	got, err := snapshot(to)
	diff := ""
	if err != nil {
		diff = err.Error()
	} else {
		var files []string
		for p, n := range got {
			if n.kind == "file" {
				files = append(files, p)
			}
		}
		want := hc.want
		if want == nil {
			want = map[string]string{okFile: okContent}
		}
		for p, content := range want {
			b, err := readBelow(to, p)
			if err != nil || string(b) != content {
				diff += fmt.Sprintf("%s not restored as written; ", p)
			}
		}
		if !hc.hostile {
			for _, p := range files {
				if _, ok := want[p]; !ok {
					diff += "extra " + p + "; "
				}
			}
		}
	}
	// The earlier savesets are untouched by the hostile one.
	if !c.checkSavesets(t, d, "h") {
		if t.Outcome != "" {
			return
		}
		t.Lost = true
		t.Detail += "an earlier saveset no longer restores exactly; "
	}
	switch {
	case t.Outcome != "":
	case hc.hostile && !reported:
		t.Outcome = Silent
		t.Detail += "every command exited 0 on a saveset that cannot be restored faithfully; " + diff
	case !hc.hostile && !reported && diff != "":
		t.Outcome = Silent
		t.Detail += "restore exited 0 but: " + diff
	case reported:
		t.Outcome = Detected
		if !hc.hostile && strings.HasPrefix(hc.name, "deep-tree") {
			t.Detail += "a legal saveset was refused; " + diff
		}
	default:
		t.Outcome = Harmless
	}
}
