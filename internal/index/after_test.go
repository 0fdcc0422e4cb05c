package index

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// countingReaderAt counts the reads of an index file.
type countingReaderAt struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// pages reads it page by page, limit entries a page, each page a new
// iterator resuming After the last path of the one before, as a paged
// listing (kura ls, find) does.
func pages(newIter func() *Iter, limit int) ([]Entry, int, error) {
	var out []Entry
	n, last := 0, ""
	for {
		it := newIter()
		if last != "" {
			it.After(last)
		}
		got := 0
		for got < limit && it.Next() {
			out = append(out, *it.Entry())
			last = it.Entry().Path
			got++
		}
		if err := it.Err(); err != nil {
			return nil, n, err
		}
		n++
		if got < limit {
			return out, n, nil
		}
	}
}

// Reading a listing page by page with After gives exactly the entries of
// one pass, and reads each block about once: a page seeks to its start,
// it does not decode the blocks of the pages before it.
func TestAfterPagesReadEachBlockOnce(t *testing.T) {
	b := build(t, nil, nil, test2(2, 10000, false))
	cr := &countingReaderAt{r: bytes.NewReader(b)}
	r, err := Open(cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	blocks := len(r.blocks)
	if blocks < 20 {
		t.Fatalf("only %d blocks: the test needs many", blocks)
	}
	for _, c := range []struct {
		name string
		iter func() *Iter
	}{
		{"all", r.Iter},
		{"children", func() *Iter { return r.Children("data/test2/d001") }},
	} {
		want, _, err := pages(c.iter, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		cr.reads = 0
		got, n, err := pages(c.iter, 50)
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, got, want)
		// Each page reads at most the block that holds its start and the
		// blocks it lists; restarting from the top would read about
		// n*blocks/2.
		if limit := blocks + 2*n; cr.reads > limit {
			t.Errorf("%s: %d pages read %d blocks (the index has %d): more than %d", c.name, n, cr.reads, blocks, limit)
		}
	}
}

// After(p) starts at the first entry after p, whether or not p is in the
// index, and never repeats p.
func TestAfterStartsAfterPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	entries := randomEntries(rng, 1000)
	r := open(t, build(t, nil, nil, entries))
	for range 20 {
		i := rng.IntN(len(entries))
		p := entries[i].Path
		if rng.IntN(2) == 0 {
			p += "\x01" // not in the index: sorts right after entries[i] among its siblings
		}
		var got []Entry
		it := r.Iter().After(p)
		for it.Next() {
			got = append(got, *it.Entry())
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		var want []Entry
		for _, e := range entries {
			if Compare(e.Path, p) > 0 {
				want = append(want, e)
			}
		}
		checkEntries(t, got, want)
	}
}
