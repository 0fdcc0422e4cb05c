package engine

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/catalog"
	"github.com/kura-backup/kura/internal/tape"
	"github.com/kura-backup/kura/internal/tape/memtape"
)

// TestRecipeNeedsDataPath: the stock-tool recipe names each part's data
// file where the device has one (a folder tape), and says clearly, with
// ErrNoDataPath, when a tape's device has none (memory here; object
// storage or a drive alike) instead of failing on a concrete type.
func TestRecipeNeedsDataPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "F1")
	lab := tape.Label{Barcode: "F1", Library: "l", BlockSize: 4096, Capacity: 1 << 20}
	ft, err := tape.Format(dir, lab, tape.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ft.Close()
	lab.Barcode = "M1"
	shelf := memtape.NewShelf(nil)
	mm, err := shelf.Format(lab)
	if err != nil {
		t.Fatal(err)
	}
	open := func(bc string) (tape.Device, error) {
		if bc == "F1" {
			return tape.Open(dir, tape.Options{})
		}
		return mm.Load(0)
	}
	files, _, _, err := recipeSources(7, []catalog.Part{{Barcode: "F1", File: 1}, {Barcode: "F1", File: 2}}, open)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "000001.data"), filepath.Join(dir, "000002.data")}; !slices.Equal(files, want) {
		t.Errorf("recipe files %v, want %v", files, want)
	}
	_, _, _, err = recipeSources(7, []catalog.Part{{Barcode: "F1", File: 1}, {Barcode: "M1", File: 1}}, open)
	if !errors.Is(err, ErrNoDataPath) || !strings.Contains(err.Error(), "saveset 7: tape M1") || !strings.Contains(err.Error(), "kura restore") {
		t.Errorf("recipe over a tape without a data path: %v, want ErrNoDataPath naming saveset 7, tape M1 and what to do", err)
	}
}
