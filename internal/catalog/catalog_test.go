package catalog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// t0 is a fixed time for records made in tests.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)

// openTemp opens a new, empty catalog for the test on the backend of its
// onBoth subtest (SQLite outside one), and returns it and its DSN.
func openTemp(t testing.TB) (*Catalog, string) {
	t.Helper()
	path := newDSN(t)
	c, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func TestOpenCreatesCurrentSchema(t *testing.T) {
	c, path := openTemp(t)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("catalog file not created: %v", err)
	}
	v, err := c.SchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v != len(migrations) {
		t.Fatalf("schema version %d, want %d", v, len(migrations))
	}
	var mode string
	if err := c.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode %q, want wal", mode)
	}
	var fk int
	if err := c.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if fk != 1 {
		t.Errorf("foreign_keys %d, want 1", fk)
	}
	// Reopening an up-to-date catalog runs no migration again.
	c.Close()
	c2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer c2.Close()
	if v, _ := c2.SchemaVersion(); v != len(migrations) {
		t.Fatalf("schema version after reopen %d, want %d", v, len(migrations))
	}
}

func TestOpenBadPath(t *testing.T) {
	if _, err := Open(""); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(\"\"): %v, want ErrInvalid", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing", "catalog.db")); err == nil {
		t.Error("Open in a missing folder succeeded")
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte("this is not a database, just text long enough to fill a header......."), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(junk); err == nil {
		t.Error("Open of a non-SQLite file succeeded")
	}
}

// A later Kura appends a migration; opening an existing catalog applies just
// that one and keeps the data.
func TestMigrateForward(t *testing.T) { onBoth(t, testMigrateForward) }

func testMigrateForward(t *testing.T) {
	c, path := openTemp(t)
	if err := c.AddLibrary(Library{Name: "default", Dir: "/vtl/default", Created: t0}); err != nil {
		t.Fatal(err)
	}
	c.Close()

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(append([][]string{}, saved...), []string{
		`CREATE TABLE future_things (name TEXT PRIMARY KEY)`,
		`INSERT INTO future_things (name) VALUES ('weekly')`,
	})
	c2, err := Open(path)
	if err != nil {
		t.Fatalf("Open with a new migration: %v", err)
	}
	defer c2.Close()
	if v, _ := c2.SchemaVersion(); v != len(saved)+1 {
		t.Fatalf("schema version %d, want %d", v, len(saved)+1)
	}
	var n int
	if err := c2.db.QueryRow(`SELECT COUNT(*) FROM future_things`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("new migration not applied once: %d rows, %v", n, err)
	}
	if _, err := c2.Library("default"); err != nil {
		t.Fatalf("data lost by migration: %v", err)
	}
}

func TestSchemaTooNew(t *testing.T) { onBoth(t, testSchemaTooNew) }

func testSchemaTooNew(t *testing.T) {
	c, path := openTemp(t)
	if _, err := c.db.Exec(`UPDATE schema_version SET version = ?`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Open(path); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer catalog: %v, want ErrSchemaTooNew", err)
	}
}

func TestReopenKeepsData(t *testing.T) { onBoth(t, testReopenKeepsData) }

func testReopenKeepsData(t *testing.T) {
	c, path := openTemp(t)
	fill(t, c)
	want := dump(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := dump(t, c2); got != want {
		t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
	}
}

func TestSnapshot(t *testing.T) { onBoth(t, testSnapshot) }

func testSnapshot(t *testing.T) {
	c, _ := openTemp(t)
	fill(t, c)
	want := dump(t, c)

	snap := filepath.Join(t.TempDir(), "snap.db")
	if err := c.Snapshot(snap); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if err := c.Snapshot(snap); !errors.Is(err, ErrExists) {
		t.Fatalf("Snapshot over an existing file: %v, want ErrExists", err)
	}
	// Changes after the snapshot do not reach it.
	if err := c.AddLibrary(Library{Name: "later", Dir: "/later"}); err != nil {
		t.Fatal(err)
	}

	s, err := Open(snap)
	if err != nil {
		t.Fatalf("Open snapshot: %v", err)
	}
	defer s.Close()
	if got := dump(t, s); got != want {
		t.Fatalf("snapshot:\n%s\nwant:\n%s", got, want)
	}
	// The snapshot is a working catalog: it takes new records and IDs go on.
	j := &Job{Kind: KindBackup, State: StateQueued}
	if err := s.CreateJob(j); err != nil {
		t.Fatal(err)
	}
	if j.ID <= 2 {
		t.Errorf("job ID %d in snapshot reuses an earlier ID", j.ID)
	}
}

// fill puts one of everything into c.
func fill(t testing.TB, c *Catalog) {
	t.Helper()
	must(t, c.AddLibrary(Library{Name: "default", Dir: "/vtl/default", Created: t0}))
	must(t, c.AddTape("KURA001L6", "default"))
	must(t, c.CreateSelection(Selection{Name: "home", Paths: []string{"/home"}, Excludes: []string{"*.tmp"}, Created: t0}))
	for i := 0; i < 2; i++ {
		must(t, c.CreateJob(&Job{Kind: KindBackup, State: StateSucceeded, Started: t0, Log: []string{"done"}}))
	}
	must(t, c.CreateSaveset(&Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete,
		Created: t0, Paths: []string{"/home"}, Parts: []Part{{Barcode: "KURA001L6", File: 1, Bytes: 10}},
		IndexPart: Part{Barcode: "KURA001L6", File: 2, Bytes: 3}}))
}

// dump renders everything in c as text, for comparing whole catalogs.
func dump(t testing.TB, c *Catalog) string {
	t.Helper()
	libs, err := c.Libraries()
	must(t, err)
	lib, err := c.TapeLibrary("KURA001L6")
	must(t, err)
	sels, err := c.Selections("")
	must(t, err)
	jobs, err := c.Jobs(0)
	must(t, err)
	sss, err := c.Savesets(SavesetFilter{})
	must(t, err)
	s := fmt.Sprintf("libraries %+v\ntape in %s\nselections %+v\n", libs, lib, sels)
	for _, j := range jobs {
		s += fmt.Sprintf("job %+v\n", *j)
	}
	for _, ss := range sss {
		s += fmt.Sprintf("saveset %+v\n", *ss)
	}
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeLoad is what each concurrent user of the catalog does: create and
// update jobs and savesets and read them back.
func writeLoad(c *Catalog, who string, n int) error {
	for i := 0; i < n; i++ {
		j := &Job{Kind: KindBackup, State: StateRunning, Client: who}
		if err := c.CreateJob(j); err != nil {
			return fmt.Errorf("%s: CreateJob: %w", who, err)
		}
		s := &Saveset{JobID: j.ID, Client: who, Selection: "sel", Level: LevelFull, Status: StatusRunning,
			Parts: []Part{{Barcode: who + "-tape", File: i}}}
		if err := c.CreateSaveset(s); err != nil {
			return fmt.Errorf("%s: CreateSaveset: %w", who, err)
		}
		s.Status = StatusComplete
		if err := c.UpdateSaveset(s); err != nil {
			return fmt.Errorf("%s: UpdateSaveset: %w", who, err)
		}
		j.State, j.SavesetID = StateSucceeded, s.ID
		if err := c.UpdateJob(j); err != nil {
			return fmt.Errorf("%s: UpdateJob: %w", who, err)
		}
		if _, err := c.LastSaveset(who, "sel", nil, time.Time{}); err != nil {
			return fmt.Errorf("%s: LastSaveset: %w", who, err)
		}
	}
	return nil
}

// checkLoad checks that every writer's n rounds all landed.
func checkLoad(t *testing.T, c *Catalog, n int, who ...string) {
	t.Helper()
	for _, w := range who {
		ss, err := c.Savesets(SavesetFilter{Clients: []string{w}, Statuses: []string{StatusComplete}, Barcode: w + "-tape"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != n {
			t.Errorf("%s: %d complete savesets, want %d", w, len(ss), n)
		}
	}
	jobs, err := c.Jobs(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n*len(who) {
		t.Errorf("%d jobs, want %d", len(jobs), n*len(who))
	}
	for _, j := range jobs {
		if j.State != StateSucceeded || j.SavesetID == 0 {
			t.Errorf("job %d: state %s, saveset %d", j.ID, j.State, j.SavesetID)
		}
	}
}

// Two Catalogs on one file, used at once from two goroutines: no "database
// is locked", no lost writes.
func TestTwoCatalogsConcurrently(t *testing.T) { onBoth(t, testTwoCatalogsConcurrently) }

func testTwoCatalogsConcurrently(t *testing.T) {
	_, path := openTemp(t)
	const n = 25
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writeLoad(c, "g"+strconv.Itoa(i), n)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkLoad(t, c, n, "g0", "g1")
}

// Several openers racing to create the same new catalog all succeed, and the
// schema is created once.
func TestConcurrentOpenOfNewCatalog(t *testing.T) { onBoth(t, testConcurrentOpenOfNewCatalog) }

func testConcurrentOpenOfNewCatalog(t *testing.T) {
	path := newDSN(t)
	const n = 4
	var wg sync.WaitGroup
	cats := make([]*Catalog, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cats[i], errs[i] = Open(path)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("opener %d: %v", i, errs[i])
			continue
		}
		defer cats[i].Close()
		if err := cats[i].AddLibrary(Library{Name: strconv.Itoa(i), Dir: "/x"}); err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
	if t.Failed() {
		return
	}
	libs, err := cats[0].Libraries()
	must(t, err)
	if len(libs) != n {
		t.Errorf("%d libraries, want %d", len(libs), n)
	}
	if v, _ := cats[0].SchemaVersion(); v != len(migrations) {
		t.Errorf("schema version %d, want %d", v, len(migrations))
	}
}

const childEnv = "KURA_CATALOG_TEST_CHILD"

// The same, with the second user in another process: the test binary run
// again as a child.
func TestTwoProcesses(t *testing.T) { onBoth(t, testTwoProcesses) }

func testTwoProcesses(t *testing.T) {
	const n = 25
	if path := os.Getenv(childEnv); path != "" {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if err := writeLoad(c, "child", n); err != nil {
			t.Fatal(err)
		}
		return
	}

	c, path := openTemp(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$/^"+backendOf(t)+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Wait()
		t.Fatalf("child did not start: %q, %v; stderr: %s", line, err, stderr.String())
	}
	// Both start writing now.
	must(t, func() error { _, err := io.WriteString(stdin, "go\n"); return err }())
	parentErr := writeLoad(c, "parent", n)
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child failed: %v\n%s%s", err, rest, stderr.String())
	}
	if parentErr != nil {
		t.Fatal(parentErr)
	}
	checkLoad(t, c, n, "parent", "child")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// Times are returned in UTC whatever zone they were given in, and the zero
// time stays zero.
func TestTimesUTC(t *testing.T) { onBoth(t, testTimesUTC) }

func testTimesUTC(t *testing.T) {
	c, _ := openTemp(t)
	zone := time.FixedZone("CEST", 2*3600)
	j := &Job{Kind: KindRestore, State: StateRunning, Started: t0.In(zone)}
	must(t, c.CreateJob(j))
	got, err := c.Job(j.ID)
	must(t, err)
	if !got.Started.Equal(t0) || got.Started.Location() != time.UTC {
		t.Errorf("Started %v, want %v in UTC", got.Started, t0)
	}
	if !got.Finished.IsZero() {
		t.Errorf("Finished %v, want zero", got.Finished)
	}
}
