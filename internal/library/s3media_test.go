package library

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kura-backup/kura/internal/tape/memtape"
)

// TestMediaConfigInLibraryJSON: the media a library names are checked
// before anything is made (an unknown kind, a URL with credentials, a
// chunk size below a block), stored in library.json as kind, URL and chunk
// size — nothing else — and read back when the library opens.
func TestMediaConfigInLibraryJSON(t *testing.T) {
	for _, c := range []struct {
		m    MediaConfig
		want string
	}{
		{MediaConfig{Kind: "ftp", URL: "http://h/b"}, "unknown media kind"},
		{MediaConfig{Kind: MediaFolder}, "a folder library has no media configuration"},
		{MediaConfig{Kind: MediaS3, URL: "http://AKID:secret@h/b"}, "credentials do not belong in the URL"},
		{MediaConfig{Kind: MediaS3, URL: "ftp://h/b"}, "want http:// or https://"},
		{MediaConfig{Kind: MediaS3, URL: "http://h/"}, "HOST/BUCKET"},
		{MediaConfig{Kind: MediaS3, URL: "http://h/b", ChunkSize: 100}, "chunk size 100"},
	} {
		cfg := testConfig(t)
		cfg.Media = &c.m
		_, err := Create(cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%+v: %v, want ErrInvalidConfig saying %q", c.m, err, c.want)
		}
		if _, err := os.Stat(cfg.Dir); !os.IsNotExist(err) {
			t.Errorf("%+v: a refused create left %s", c.m, cfg.Dir)
		}
	}

	cfg := testConfig(t)
	m := &MediaConfig{Kind: MediaS3, URL: "https://s3.example.com/bucket/pre/fix", ChunkSize: 1 << 20}
	cfg.Media = m
	media := memMedia{memtape.NewShelf(nil)}
	if _, err := CreateWithMedia(cfg, media); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Dir, configFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(raw["media"], &stored); err != nil {
		t.Fatalf("library.json media: %v\n%s", err, b)
	}
	keys := make([]string, 0, len(stored))
	for k := range stored {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"chunk_size", "kind", "url"}) {
		t.Errorf("library.json media holds %v, want kind, url and chunk_size only", keys)
	}
	l, err := OpenWithMedia(cfg.Dir, media)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config().Media; got == nil || !reflect.DeepEqual(*got, *m) {
		t.Errorf("media read back %+v, want %+v", got, m)
	}
}

// TestCreateAdoptsItsTapes: a library created again over media that hold
// its tapes (its folder lost, its tapes in a bucket) puts them back into
// its slots with what they hold, and labels blank ones only for the slots
// left; a library of another name adopts none and never reuses their
// barcodes.
func TestCreateAdoptsItsTapes(t *testing.T) {
	cfg := testConfig(t)
	cfg.Slots = 2
	media := memMedia{memtape.NewShelf(nil)}
	l, err := CreateWithMedia(cfg, media)
	if err != nil {
		t.Fatal(err)
	}
	drv, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, bc, err := drv.LoadWritable()
	if err != nil {
		t.Fatal(err)
	}
	info := writeFile(t, dev, 50000)
	if err := drv.Release(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		t.Fatal(err)
	}

	cfg.Slots = 3
	again, err := CreateWithMedia(cfg, media)
	if err != nil {
		t.Fatal(err)
	}
	tapes, err := again.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ts := range tapes {
		got = append(got, ts.Barcode)
	}
	if !slices.Equal(got, []string{"KUR001", "KUR002", "KUR003"}) {
		t.Fatalf("the library created again holds %v, want its two tapes and one new", got)
	}
	if ts := tapeByBarcode(t, again, bc); ts.Files != 1 || ts.Used != info.Bytes {
		t.Errorf("adopted %s: %+v, want its tape file of %d bytes", bc, ts, info.Bytes)
	}

	other := testConfig(t)
	other.Name, other.Slots = "other", 1
	o, err := CreateWithMedia(other, media)
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := o.Tapes(); err != nil || len(ts) != 1 || ts[0].Barcode != "KUR004" {
		t.Errorf("another library over the same media: %+v (%v), want one new tape KUR004", ts, err)
	}
}
