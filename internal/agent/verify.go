package agent

import (
	"context"
	"fmt"

	"github.com/kura-backup/kura/internal/api"
	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/stream"
)

// VerifyResult is what a data verify on the agent found (kura agent verify).
type VerifyResult struct {
	SavesetID int64
	Checked   int64 // entries checked (files re-hashed, the others' index entries read)
	Bytes     int64 // file content re-hashed
	Problems  []string
}

// VerifyData is `kura verify --level data` run where the key is: it reads
// one of this client's savesets through the server (decrypting an
// encrypted one, every chunk authenticated), decodes the stream and
// checks every file's content against its digest in the index. A
// problem is one line naming its file; the error is for what stops the
// verify (no key, the wrong key, no such saveset).
func (a *Agent) VerifyData(ctx context.Context, id int64) (*VerifyResult, error) {
	return a.verify(ctx, id, false)
}

// VerifySource is `kura verify --level source` run where the key is and
// the files are: the data verify, and every entry of the index compared
// with the file on this machine now (producer.CompareSource: type,
// content, mode, owner, times, link target, xattrs). A difference is a
// problem naming the file and what differs.
func (a *Agent) VerifySource(ctx context.Context, id int64) (*VerifyResult, error) {
	return a.verify(ctx, id, true)
}

func (a *Agent) verify(ctx context.Context, id int64, source bool) (*VerifyResult, error) {
	sets, err := a.Savesets(ctx)
	if err != nil {
		return nil, err
	}
	var ss *api.Saveset
	for i := range sets {
		if sets[i].ID == id {
			ss = &sets[i]
		}
	}
	if ss == nil {
		return nil, fmt.Errorf("saveset %d is not a complete saveset of client %s", id, a.Name())
	}
	idx, err := a.OpenIndex(ctx, id)
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	rd, err := a.ownReader(ctx, ss, idx)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	res := &VerifyResult{SavesetID: id}
	problem := func(e *index.Entry, msg string) {
		res.Problems = append(res.Problems, index.DisplayPath(e.Path)+": "+msg)
	}
	it := idx.Iter()
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for _, b := range it.Invalid() {
			res.Problems = append(res.Problems, index.DisplayPath(b.Path)+": "+b.Error()+"; it cannot be restored")
		}
		e := *it.Entry()
		if source {
			if d := producer.CompareSource(&e); d != "" {
				problem(&e, d)
			}
		}
		if e.Flags&index.FlagUnchanged != 0 {
			continue
		}
		res.Checked++
		if e.Type != index.TypeFile {
			continue
		}
		if err := rd.SeekTo(e.Offset); err != nil {
			problem(&e, "cannot read its data: "+err.Error())
			continue
		}
		hdr, err := rd.Next()
		if err != nil {
			problem(&e, "cannot read its data: "+err.Error())
			continue
		}
		if hdr.Path != e.Path || hdr.Size != e.Size {
			problem(&e, fmt.Sprintf("the stream holds %q (%d bytes) where the index expects this file", hdr.Path, hdr.Size))
			continue
		}
		h := stream.NewDigest()
		n, err := rd.HashContent(h)
		res.Bytes += n
		if err != nil {
			problem(&e, "cannot read its data: "+err.Error())
			continue
		}
		if stream.SumDigest(h) != e.Digest {
			problem(&e, "content does not match its digest")
		}
	}
	if err := it.Err(); err != nil {
		return res, fmt.Errorf("reading the index: %w", err)
	}
	return res, nil
}
