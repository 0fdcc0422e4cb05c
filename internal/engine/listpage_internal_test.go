package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A folder read page by page checks the saveset's whole cached index for
// its first page only: each later page opens the cache as it is and reads
// the blocks it lists, so reading a folder of n pages costs about one pass
// over the index, not n (the console's next-page link, kura ls in server
// mode). Counted, not timed: a pass per page is what made paging quadratic.
func TestLaterPagesCheckNoIndex(t *testing.T) {
	e, err := Open(filepath.Join(t.TempDir(), "home"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src := t.TempDir()
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Backup(context.Background(), BackupOptions{Paths: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Figures.SavesetID

	first, err := e.ListPage(id, src, "", 3, nil)
	if err != nil || len(first.Entries) != 3 || first.Next == "" {
		t.Fatalf("the first page: %+v, %v", first, err)
	}
	before := indexChecks.Load()
	n, pages := len(first.Entries), 1
	for after := first.Next; after != ""; pages++ {
		p, err := e.ListPage(id, src, after, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Entries)
		after = p.Next
	}
	if n != 30 || pages != 11 {
		t.Fatalf("%d entries in %d pages; want 30 in 11 (the last one empty)", n, pages)
	}
	if checks := indexChecks.Load() - before; checks != 0 {
		t.Errorf("the %d later pages checked the whole index %d times; want none (the first page checked it)", pages-1, checks)
	}

	// A later page of a saveset whose cache is gone reads it back as a
	// first page does, and goes on where it was.
	ss, err := e.Catalog.Saveset(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.indexCachePath(ss)); err != nil {
		t.Fatal(err)
	}
	p, err := e.ListPage(id, src, first.Next, 3, nil)
	if err != nil || len(p.Entries) != 3 || p.Entries[0].Path == first.Entries[2].Path {
		t.Fatalf("a later page without the cache: %+v, %v", p, err)
	}
	if _, err := e.ListPage(id+1, src, first.Next, 3, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("a later page of a saveset that does not exist: %v; want ErrNotFound", err)
	}
}
