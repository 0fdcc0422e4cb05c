package producer

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kura-backup/kura/internal/stream"
)

// TestDataExtentsLeavesTheOffset: mapping a file's holes does not move
// where it is read from next (a file mapped and then read whole — a dense
// one, or one with too many extents — must be read from its start).
func TestDataExtentsLeavesTheOffset(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	content := bytes.Repeat([]byte("0123456789"), 1000)
	if _, err := f.WriteAt(content, 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 10)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	data := DataExtents(int(f.Fd()), 1<<20+int64(len(content)))
	if want := []stream.Extent{{Offset: 1 << 20, Length: int64(len(content))}}; !slices.Equal(data, want) {
		t.Errorf("extents %v, want %v", data, want)
	}
	if at, _ := f.Seek(0, io.SeekCurrent); at != 10 {
		t.Fatalf("after DataExtents the file is read from %d, not 10", at)
	}
	// A dense file has no map.
	if d := DataExtents(int(f.Fd()), 1<<20-4096); d == nil || len(d) != 0 {
		t.Errorf("the hole before the data, alone: %v, want no extents (only a hole)", d)
	}
	q := filepath.Join(t.TempDir(), "dense")
	os.WriteFile(q, content, 0o644)
	g, _ := os.Open(q)
	defer g.Close()
	if d := DataExtents(int(g.Fd()), int64(len(content))); d != nil {
		t.Errorf("a dense file: %v, want nil", d)
	}
}
