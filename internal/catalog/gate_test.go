package catalog

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"
)

// waitFor yields until cond holds (the goroutines it waits for only need
// to reach the gate, nothing else).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the writers never reached the gate")
		}
	}
}

// Writers take their turns in order of arrival, except that a write that
// starts work goes before the others waiting; one kept waiting past the
// timeout fails with ErrBusy and leaves the gate working.
func TestGateTurns(t *testing.T) {
	g := &gate{timeout: time.Minute}
	if err := g.enter(false); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 8)
	writer := func(name string, urgent bool) {
		if err := g.enter(urgent); err != nil {
			order <- "error: " + err.Error()
			return
		}
		order <- name
		g.leave()
	}
	for _, name := range []string{"n1", "n2", "n3"} {
		go writer(name, false)
		n := name[1] - '0'
		waitFor(t, func() bool { _, w := g.waiting(); return w == int(n) })
	}
	go writer("u1", true)
	waitFor(t, func() bool { u, _ := g.waiting(); return u == 1 })
	go writer("u2", true)
	waitFor(t, func() bool { u, _ := g.waiting(); return u == 2 })
	g.leave()
	var got []string
	for range 5 {
		got = append(got, <-order)
	}
	if want := []string{"u1", "u2", "n1", "n2", "n3"}; !slices.Equal(got, want) {
		t.Errorf("turns %v, want %v", got, want)
	}
	if u, n := g.waiting(); u != 0 || n != 0 || g.busy {
		t.Errorf("after every writer: %d + %d waiting, busy %v", u, n, g.busy)
	}

	// A writer that waits too long gives up with ErrBusy.
	g = &gate{timeout: time.Millisecond}
	if err := g.enter(false); err != nil {
		t.Fatal(err)
	}
	if err := g.enter(true); !errors.Is(err, ErrBusy) {
		t.Errorf("a writer kept waiting: %v, want ErrBusy", err)
	}
	if u, n := g.waiting(); u != 0 || n != 0 {
		t.Errorf("the writer that gave up still waits: %d + %d", u, n)
	}
	g.leave()
	if err := g.enter(false); err != nil {
		t.Errorf("the gate after a writer gave up: %v", err)
	}
	g.leave()
}

// On SQLite the catalog's writes go through the gate: a write waits while
// another of this process holds the turn, and a job queued goes first.
func TestCatalogWritesTakeTurns(t *testing.T) {
	c, _ := openTemp(t) // SQLite: PostgreSQL queues its writers fairly itself, and has no gate
	if c.db.gate == nil {
		t.Fatal("a SQLite catalog without a write gate")
	}
	g := c.db.gate
	if err := g.enter(false); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 2)
	go func() {
		err := c.write(func(tx *txn) error {
			_, err := tx.Exec(`INSERT INTO settings (name, value) VALUES ('h5', 'x')`)
			return err
		})
		done <- "setting " + errText(err)
	}()
	waitFor(t, func() bool { _, n := g.waiting(); return n == 1 })
	go func() {
		err := c.CreateJob(&Job{Kind: "backup", State: StateQueued, Client: "c1"})
		done <- "job " + errText(err)
	}()
	waitFor(t, func() bool { u, _ := g.waiting(); return u == 1 })
	g.leave()
	first, second := <-done, <-done
	if first != "job " || second != "setting " {
		t.Errorf("writes done in the order %q, %q; want the queued job first, both without error", first, second)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
