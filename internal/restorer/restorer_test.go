package restorer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kura-backup/kura/internal/index"
	"github.com/kura-backup/kura/internal/monitor"
	"github.com/kura-backup/kura/internal/producer"
	"github.com/kura-backup/kura/internal/restorer"
	"github.com/kura-backup/kura/internal/stream"
)

// memSaveset is one saveset held in memory: its frames as one part, and
// its index.
type memSaveset struct {
	data []byte
	idx  []byte
}

func (m *memSaveset) WriteFrame(frame []byte) (stream.Location, error) {
	loc := stream.Location{Offset: int64(len(m.data))}
	m.data = append(m.data, frame...)
	return loc, nil
}

// memStore is a restorer.Store without catalog or tapes: what an agent or
// any other caller gives the restorer.
type memStore struct{ sets map[int64]*memSaveset }

func (s *memStore) Saveset(id int64) (*restorer.Saveset, error) {
	if s.sets[id] == nil {
		return nil, errors.New("no such saveset")
	}
	return &restorer.Saveset{ID: id, Tapes: []string{"MEM001"}}, nil
}

func (s *memStore) OpenIndex(ss *restorer.Saveset, _ func(string)) (*index.Reader, error) {
	b := s.sets[ss.ID].idx
	return index.Open(bytes.NewReader(b), int64(len(b)))
}

func (s *memStore) Data(ss *restorer.Saveset) (stream.FrameSource, error) {
	return dataOf(s.sets[ss.ID].data), nil
}

type dataOf []byte

func (d dataOf) OpenAt(loc stream.Location) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(d[loc.Offset:])), nil
}

// produce backs up dir with the producer into memory.
func produce(t *testing.T, dir string) *memSaveset {
	t.Helper()
	ss := &memSaveset{}
	var idx bytes.Buffer
	phase := monitor.StartPhase(monitor.SystemClock{}, "backup")
	prod, err := producer.Local{}.Produce(context.Background(), producer.Spec{JobID: 1, Paths: []string{dir}},
		ss, &idx, producer.Hooks{Phase: phase})
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.FinishIndex(nil, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	ss.idx = idx.Bytes()
	return ss
}

// TestRestoreFromAStore: the restorer writes a saveset's files from any
// Store, with no catalog, engine or home behind it, and says what it did.
func TestRestoreFromAStore(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"a.txt": "alpha", "sub/b.txt": "beta", "sub/deep/c.txt": "gamma gamma"}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(src, "a.txt"), filepath.Join(src, "sub/a-link")); err != nil {
		t.Fatal(err)
	}
	store := &memStore{sets: map[int64]*memSaveset{7: produce(t, src)}}
	to := t.TempDir()
	out, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7, Tapes: []string{"MEM001"}},
		restorer.Options{To: to}, restorer.Job{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(to, src, name))
		if err != nil || string(got) != body {
			t.Errorf("%s: %q, %v; want %q", name, got, err, body)
		}
	}
	a, err := os.Stat(filepath.Join(to, src, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := os.Stat(filepath.Join(to, src, "sub/a-link"))
	if err != nil || !os.SameFile(a, l) {
		t.Errorf("the hard link is not one: %v", err)
	}
	if a.Mode().Perm() != 0o640 {
		t.Errorf("a.txt mode %v, want 0640", a.Mode().Perm())
	}
	if out.To != to || out.WarningCount != 0 || len(out.Sources) != 1 || out.Sources[0] != 7 ||
		len(out.Tapes) != 1 || out.Tapes[0] != "MEM001" || out.Bytes != int64(len("alpha")+len("beta")+len("gamma gamma")) {
		t.Errorf("outcome %+v", out)
	}

	// Neither a target nor in place: nothing is written.
	if _, err := restorer.Run(context.Background(), store, &restorer.Saveset{ID: 7}, restorer.Options{},
		restorer.Job{}); !errors.Is(err, restorer.ErrRestoreTarget) {
		t.Errorf("no target: %v, want ErrRestoreTarget", err)
	}
}
