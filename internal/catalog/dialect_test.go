package catalog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestRebind(t *testing.T) {
	d := &dialect{name: "postgres"}
	for q, want := range map[string]string{
		`SELECT a FROM t WHERE b = ? AND c = ?`:      `SELECT a FROM t WHERE b = $1 AND c = $2`,
		`SELECT '?' FROM t WHERE b = ?`:              `SELECT '?' FROM t WHERE b = $1`,
		`SELECT "a?" FROM t WHERE b = 'it''s?' OR ?`: `SELECT "a?" FROM t WHERE b = 'it''s?' OR $1`,
		`SELECT 1`: `SELECT 1`,
	} {
		if got := d.rebind(q); got != want {
			t.Errorf("rebind(%q) = %q, want %q", q, got, want)
		}
		if got := d.rebind(q); got != want {
			t.Errorf("rebind(%q) from the cache = %q, want %q", q, got, want)
		}
	}
	s := &dialect{name: "sqlite"}
	if q := `SELECT ? FROM t`; s.rebind(q) != q {
		t.Errorf("sqlite rebind changed %q", q)
	}
}

// Every integer is 64 bits on both databases: times in nanoseconds, sizes
// and IDs past 2^31 come back as they went in.
func TestLargeIntegers(t *testing.T) { onBoth(t, testLargeIntegers) }

func testLargeIntegers(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{ID: 1 << 40, Kind: KindBackup, State: StateSucceeded, Started: t0, SourceBytes: 1 << 50}
	must(t, c.CreateJob(j))
	got, err := c.Job(1 << 40)
	must(t, err)
	if got.SourceBytes != 1<<50 || !got.Started.Equal(t0) {
		t.Fatalf("job %d: source bytes %d, started %s", got.ID, got.SourceBytes, got.Started)
	}
}

// An ID given explicitly moves the counter on, so an ID the catalog picks
// later never collides with it; ReserveSavesetIDs raises it; a deleted
// saveset's ID is not given out again.
func TestIDsNeverReused(t *testing.T) { onBoth(t, testIDsNeverReused) }

func testIDsNeverReused(t *testing.T) {
	c, _ := openTemp(t)
	must(t, c.CreateJob(&Job{ID: 100, Kind: KindBackup, State: StateSucceeded, Started: t0}))
	j := &Job{Kind: KindBackup, State: StateSucceeded, Started: t0}
	must(t, c.CreateJob(j))
	if j.ID != 101 {
		t.Errorf("job after job 100: ID %d, want 101", j.ID)
	}
	if _, err := c.CreateLeasedJob(&Job{ID: 200, Kind: KindBackup, Started: t0}, "h", t0, 60e9); err != nil {
		t.Fatal(err)
	}
	j = &Job{Kind: KindBackup, State: StateSucceeded, Started: t0}
	must(t, c.CreateJob(j))
	if j.ID != 201 {
		t.Errorf("job after leased job 200: ID %d, want 201", j.ID)
	}

	s := &Saveset{ID: 50, JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	must(t, c.CreateSaveset(s))
	s2 := &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	must(t, c.CreateSaveset(s2))
	if s2.ID != 51 {
		t.Errorf("saveset after saveset 50: ID %d, want 51", s2.ID)
	}
	must(t, c.ReserveSavesetIDs(70))
	must(t, c.ReserveSavesetIDs(60)) // never goes down
	s3 := &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	must(t, c.CreateSaveset(s3))
	if s3.ID != 71 {
		t.Errorf("saveset after reserving 70: ID %d, want 71", s3.ID)
	}
	must(t, c.DeleteSaveset(s3.ID))
	s4 := &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	must(t, c.CreateSaveset(s4))
	if s4.ID != 72 {
		t.Errorf("saveset after deleting 71: ID %d, want 72", s4.ID)
	}
}

// A catalog copied to the other database (SQLite to PostgreSQL and back)
// holds the same records, sums the same, and goes on with IDs the original
// never used, even those of deleted savesets.
func TestCopyBetweenDatabases(t *testing.T) {
	sq := filepath.Join(t.TempDir(), "catalog.db")
	src, err := Open(sq)
	must(t, err)
	defer src.Close()
	fill(t, src)
	must(t, c3(src))
	want := dump(t, src)

	pgc := openPG(t)
	sums, err := src.CopyTo(pgc)
	must(t, err)
	if len(sums) != len(tables) {
		t.Fatalf("%d sums, want %d", len(sums), len(tables))
	}
	for _, s := range sums {
		if s.Table == "savesets" && s.Rows != 2 || s.Table == "jobs" && s.Rows != 2 || s.Table == "wal_spools" && s.Rows != 1 || len(s.Sum) != 64 {
			t.Errorf("sum %+v", s)
		}
	}
	if got := dump(t, pgc); got != want {
		t.Fatalf("PostgreSQL copy:\n%s\nwant:\n%s", got, want)
	}
	srcSums, err := src.Sums()
	must(t, err)
	pgSums, err := pgc.Sums()
	must(t, err)
	for i := range srcSums {
		if srcSums[i] != pgSums[i] {
			t.Errorf("sums differ: %+v and %+v", srcSums[i], pgSums[i])
		}
	}
	// The saveset with the highest ID was deleted before the copy: the
	// copy does not give its ID out again, nor any job ID.
	s := &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	must(t, pgc.CreateSaveset(s))
	if s.ID != 4 {
		t.Errorf("new saveset in the copy: ID %d, want 4 (3 was deleted)", s.ID)
	}
	j := &Job{Kind: KindBackup, State: StateSucceeded, Started: t0}
	must(t, pgc.CreateJob(j))
	if j.ID != 3 {
		t.Errorf("new job in the copy: ID %d, want 3", j.ID)
	}
	tok := &Token{Hash: "h2", Kind: TokenEnroll, Name: "b", Expires: t0.Add(3600e9)}
	must(t, pgc.CreateToken(tok))
	if tok.ID != 2 {
		t.Errorf("new token in the copy: ID %d, want 2", tok.ID)
	}

	// And back, into a new SQLite catalog.
	back, err := Open(filepath.Join(t.TempDir(), "back.db"))
	must(t, err)
	defer back.Close()
	if _, err := pgc.CopyTo(back); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, back), dump(t, pgc); got != want {
		t.Fatalf("SQLite copy of the copy:\n%s\nwant:\n%s", got, want)
	}
	s = &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	must(t, back.CreateSaveset(s))
	if s.ID != 5 {
		t.Errorf("new saveset in the copy of the copy: ID %d, want 5", s.ID)
	}
}

// c3 adds what fill does not: a token, a deleted saveset (ID 3), a setting
// and a client.
func c3(c *Catalog) error {
	if err := c.CreateToken(&Token{Hash: "h1", Kind: TokenEnroll, Name: "a", Expires: t0.Add(3600e9)}); err != nil {
		return err
	}
	s := &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	if err := c.CreateSaveset(s); err != nil {
		return err
	}
	s3 := &Saveset{JobID: 1, Selection: "home", Level: LevelFull, Status: StatusComplete, Created: t0}
	if err := c.CreateSaveset(s3); err != nil {
		return err
	}
	if err := c.DeleteSaveset(s3.ID); err != nil {
		return err
	}
	if err := c.SetSetting("k", "v"); err != nil {
		return err
	}
	if err := c.EnrollClient(Client{Name: "web1", CertSerial: "1", CertFingerprint: strings.Repeat("a", 64), Enrolled: t0}); err != nil {
		return err
	}
	return c.SetWALSpools("web1", []WALSpool{{Cluster: "main", Files: 2, Oldest: "000000010000000000000004", OldestSince: t0,
		LastArchived: "000000010000000000000003", LastArchivedAt: t0.Add(-60e9), LastError: "no tape", LastErrorAt: t0, Reported: t0}})
}

// openPG opens a catalog on a new PostgreSQL database.
func openPG(t *testing.T) *Catalog {
	t.Helper()
	c, err := Open(pgDSN(t))
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// A copy goes only into an empty catalog, and a refused copy changes
// nothing in the target.
func TestCopyRefusesNonEmptyTarget(t *testing.T) {
	src, _ := openTemp(t)
	fill(t, src)
	dst := openPG(t)
	must(t, dst.AddLibrary(Library{Name: "mine", Dir: "/mine", Created: t0}))
	before := dump2(t, dst)
	if _, err := src.CopyTo(dst); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("copy into a catalog with a library: %v, want ErrNotEmpty", err)
	}
	if got := dump2(t, dst); got != before {
		t.Fatalf("refused copy changed the target:\n%s\nwas:\n%s", got, before)
	}
}

// dump2 is the target's sums, as text.
func dump2(t *testing.T, c *Catalog) string {
	sums, err := c.Sums()
	must(t, err)
	var b strings.Builder
	for _, s := range sums {
		b.WriteString(s.Table + " " + s.Sum + "\n")
	}
	return b.String()
}

// A migration that adds a table the copy does not know fails the copy
// rather than leaving the table behind.
func TestCopyRefusesUnknownTable(t *testing.T) {
	src, _ := openTemp(t)
	_, err := src.db.Exec(`CREATE TABLE later (name TEXT PRIMARY KEY)`)
	must(t, err)
	dst, _ := openTemp(t)
	if _, err := src.CopyTo(dst); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "later") {
		t.Fatalf("copy of a catalog with an unknown table: %v, want ErrInvalid naming it", err)
	}
}

// ReplaceWith puts the records of another catalog (a restored snapshot) in
// place of all of this one's, and its ID counters never go down.
func TestReplaceWith(t *testing.T) { onBoth(t, testReplaceWith) }

func testReplaceWith(t *testing.T) {
	c, _ := openTemp(t)
	fill(t, c)
	for i := 0; i < 5; i++ {
		must(t, c.CreateJob(&Job{Kind: KindBackup, State: StateSucceeded, Started: t0}))
	}
	must(t, c.SetSetting("only-here", "x"))
	snap, err := Open(filepath.Join(t.TempDir(), "snap.db"))
	must(t, err)
	defer snap.Close()
	fill(t, snap)
	must(t, snap.AddLibrary(Library{Name: "other", Dir: "/other", Created: t0}))
	want := dump(t, snap)

	sums, err := c.ReplaceWith(snap)
	must(t, err)
	if len(sums) != len(tables) {
		t.Fatalf("%d sums", len(sums))
	}
	if got := dump(t, c); got != want {
		t.Fatalf("after ReplaceWith:\n%s\nwant:\n%s", got, want)
	}
	if v, err := c.Setting("only-here"); v != "" || err != nil {
		t.Errorf("a setting only the replaced catalog had: %q, %v; want it gone", v, err)
	}
	j := &Job{Kind: KindBackup, State: StateSucceeded, Started: t0}
	must(t, c.CreateJob(j))
	if j.ID != 8 {
		t.Errorf("new job after ReplaceWith: ID %d, want 8 (the replaced catalog had 7)", j.ID)
	}
}

// Text that is not UTF-8 (an error naming a file whose name is not) or
// holds a NUL is stored on both databases: as it is on SQLite, with U+FFFD
// for the bad bytes on PostgreSQL, whose text is UTF-8 without NUL.
func TestTextNotUTF8(t *testing.T) { onBoth(t, testTextNotUTF8) }

func testTextNotUTF8(t *testing.T) {
	c, _ := openTemp(t)
	j := &Job{Kind: KindBackup, State: StateFailed, Started: t0, Error: "reading /data/caf\xe9\x00.txt: denied"}
	must(t, c.CreateJob(j))
	got, err := c.Job(j.ID)
	must(t, err)
	want := j.Error
	if backendOf(t) == "postgres" {
		want = "reading /data/caf\uFFFD\uFFFD.txt: denied"
	}
	if got.Error != want {
		t.Fatalf("error read back %q, want %q", got.Error, want)
	}
	// Such a catalog copies to PostgreSQL and back, the sums agreeing.
	pgc := openPG(t)
	if _, err := c.CopyTo(pgc); err != nil {
		t.Fatalf("copy to PostgreSQL: %v", err)
	}
	back, err := Open(filepath.Join(t.TempDir(), "back.db"))
	must(t, err)
	defer back.Close()
	if _, err := pgc.CopyTo(back); err != nil {
		t.Fatalf("copy back to SQLite: %v", err)
	}
}

// A catalog URL prints without its password, in the user part or as a
// parameter; a URL pgx cannot parse is ErrInvalid, its password unprinted.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://kura:s3cret@db:5432/kura":                "postgres://kura:xxxxx@db:5432/kura",
		"postgresql://kura@db/kura?password=s3cret&x=1":      "postgresql://kura@db/kura?password=xxxxx&x=1",
		"postgres://kura@db/kura":                            "postgres://kura@db/kura",
		"/var/lib/kura/catalog.db":                           "/var/lib/kura/catalog.db",
		"postgres://kura:s3cret@db/kura?sslmode=verify-full": "postgres://kura:xxxxx@db/kura?sslmode=verify-full",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	_, err := Open("postgres://kura:s3cret@db:notaport/kura")
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open of a bad URL: %v; want ErrInvalid without the password", err)
	}
}
