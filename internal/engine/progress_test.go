package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kura-backup/kura/internal/engine"
	"github.com/kura-backup/kura/internal/monitor"
)

// progressOf returns the progress events of one phase.
func progressOf(rec *monitor.Recorder, phase string) []monitor.Event {
	var out []monitor.Event
	for _, ev := range rec.Events() {
		if ev.Kind == monitor.Progress && ev.Phase == phase {
			out = append(out, ev)
		}
	}
	return out
}

// Every phase that reads or writes tape says which tape, and knows its
// total where it can: a backup from the last backup of the same selection
// and level, a restore and a verify from the catalog and the index. The
// terminal turns these into a percentage and the time left.
func TestProgressKnowsTotalAndTape(t *testing.T) {
	env := newEnv(t)
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(src, 0o755))
	for i := range 12 {
		must(t, os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))), []byte(strings.Repeat("x", 5000*(i+1))), 0o644))
	}
	check := func(what string, evs []monitor.Event, total int64, tape string) {
		t.Helper()
		if len(evs) == 0 {
			t.Fatalf("%s: no progress events", what)
		}
		for _, ev := range evs {
			if ev.Total != total || ev.Tape != tape {
				t.Fatalf("%s: progress %+v, want total %d on tape %s", what, ev, total, tape)
			}
		}
	}
	run := func(f func()) *monitor.Recorder {
		rec := &monitor.Recorder{}
		env.Events = rec
		f()
		env.Events = monitor.Nop{}
		return rec
	}

	var first, second, incr1 *engine.Result
	rec := run(func() { first = backup(t, env, engine.BackupOptions{Paths: []string{src}}) })
	tape := first.Figures.Tapes[0]
	// Nothing to go by but the pre-count, which may or may not end before
	// the backup does (TestFirstBackupPreCountGivesATotal): either no total
	// or the right one.
	for _, ev := range progressOf(rec, "backup") {
		if (ev.Total != 0 && ev.Total != first.Figures.SourceBytes) || ev.Tape != tape {
			t.Fatalf("first full: progress %+v, want total 0 or %d on tape %s", ev, first.Figures.SourceBytes, tape)
		}
	}
	rec = run(func() { second = backup(t, env, engine.BackupOptions{Paths: []string{src}}) })
	check("second full", progressOf(rec, "backup"), first.Figures.SourceBytes, tape)

	must(t, os.WriteFile(filepath.Join(src, "fa"), []byte(strings.Repeat("y", 7000)), 0o644))
	rec = run(func() { incr1 = backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}) })
	check("first incr", progressOf(rec, "backup"), 0, tape)
	must(t, os.WriteFile(filepath.Join(src, "fb"), []byte(strings.Repeat("z", 9000)), 0o644))
	rec = run(func() { backup(t, env, engine.BackupOptions{Paths: []string{src}, Level: engine.LevelIncr}) })
	check("second incr", progressOf(rec, "backup"), incr1.Figures.SourceBytes, tape)

	id := second.Figures.SavesetID
	ss := saveset(t, env, id)
	rec = run(func() {
		if _, err := env.Verify(context.Background(), id, engine.VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	check("verify data", progressOf(rec, "verify"), ss.SourceBytes, tape)
	rec = run(func() {
		if _, err := env.Verify(context.Background(), id, engine.VerifyOptions{Level: engine.VerifyMedia}); err != nil {
			t.Fatal(err)
		}
	})
	media := progressOf(rec, "verify")
	if len(media) == 0 || media[0].Total < ss.MediaBytes || media[0].Tape != tape {
		t.Fatalf("verify media: progress %+v, want a total of at least the saveset's %d media bytes, on tape %s", media, ss.MediaBytes, tape)
	}
	rec = run(func() {
		if _, err := env.Verify(context.Background(), id, engine.VerifyOptions{Sample: 50}); err != nil {
			t.Fatal(err)
		}
	})
	sample := progressOf(rec, "verify")
	if len(sample) == 0 || sample[0].Total <= 0 || sample[0].Total >= ss.SourceBytes {
		t.Fatalf("verify of a 50%% sample: progress %+v, want a total between 0 and %d", sample, ss.SourceBytes)
	}
	var last monitor.Event
	for _, ev := range sample {
		last = ev
	}
	if last.Bytes > last.Total {
		t.Errorf("verify of a sample checked %d bytes, more than the %d it expected", last.Bytes, last.Total)
	}

	rec = run(func() { restore(t, env, engine.RestoreOptions{SavesetID: id, To: t.TempDir()}) })
	check("restore", progressOf(rec, "restore"), ss.SourceBytes, tape)
}

// gatedSink holds the backup's progress without a total until the event
// with one arrives: the backup goes on only once the pre-count, which runs
// beside it, has had its say, whatever the machine's speed.
type gatedSink struct {
	monitor.Recorder
	gotTotal chan struct{}
	once     sync.Once
	t        *testing.T
}

func (g *gatedSink) Event(ev monitor.Event) {
	g.Recorder.Event(ev)
	if ev.Kind != monitor.Progress || ev.Phase != "backup" {
		return
	}
	if ev.Total > 0 {
		g.once.Do(func() { close(g.gotTotal) })
		return
	}
	select {
	case <-g.gotTotal:
	case <-time.After(time.Minute): // only a broken pre-count gets here
		g.t.Errorf("no pre-count total within a minute")
		g.once.Do(func() { close(g.gotTotal) })
	}
}

// A first backup (nothing earlier of the selection at its level) gets its
// total from a pre-count of the selection run beside it: once the count
// is in, progress shows it, and it is the size the backup then reads.
func TestFirstBackupPreCountGivesATotal(t *testing.T) {
	env := newEnv(t)
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	var want int64
	for i := range 40 {
		data := strings.Repeat("p", 3000*(i+1))
		want += int64(len(data))
		must(t, os.WriteFile(filepath.Join(src, "sub", fmt.Sprintf("f%02d", i)), []byte(data), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(src, "skipped.tmp"), []byte("not counted"), 0o644))
	sink := &gatedSink{gotTotal: make(chan struct{}), t: t}
	env.Events = sink
	res := backup(t, env, engine.BackupOptions{Paths: []string{src}, Excludes: []string{"*.tmp"}})
	env.Events = monitor.Nop{}
	if res.Figures.SourceBytes != want {
		t.Fatalf("backup read %d bytes, want %d", res.Figures.SourceBytes, want)
	}
	var totals []int64
	for _, ev := range progressOf(&sink.Recorder, "backup") {
		if ev.Total > 0 {
			totals = append(totals, ev.Total)
		}
	}
	if len(totals) == 0 {
		t.Fatal("no progress event of the first backup has a total")
	}
	for _, got := range totals {
		if got != want {
			t.Errorf("pre-count total %d, want the %d bytes of the selection", got, want)
		}
	}
}
