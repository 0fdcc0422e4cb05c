package catalog

import (
	"fmt"
	"testing"
)

// BenchmarkCreateJob inserts jobs one by one, each its own durable commit.
func BenchmarkCreateJob(b *testing.B) {
	c, _ := openTemp(b)
	b.ReportAllocs()
	for b.Loop() {
		j := &Job{Kind: KindBackup, State: StateSucceeded, Client: "db1", Selection: "home",
			Tapes: []string{"A1"}, Log: []string{"started", "done"}}
		if err := c.CreateJob(j); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateSaveset inserts savesets with two data parts and an index
// part, one transaction each.
func BenchmarkCreateSaveset(b *testing.B) {
	c, _ := openTemp(b)
	b.ReportAllocs()
	for b.Loop() {
		s := &Saveset{Client: "db1", Selection: "home", Level: LevelFull, Status: StatusComplete,
			Paths: []string{"/home"}, Parts: []Part{{Barcode: "A1", File: 1}, {Barcode: "A2", File: 1}},
			IndexPart: Part{Barcode: "A2", File: 2}}
		if err := c.CreateSaveset(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSavesetsByBarcode lists the savesets on one tape among 10k
// savesets spread over 100 tapes.
func BenchmarkSavesetsByBarcode(b *testing.B) {
	c, _ := openTemp(b)
	fillSavesets(b, c, 10000)
	for b.Loop() {
		ss, err := c.Savesets(SavesetFilter{Barcode: "T042"})
		if err != nil || len(ss) != 100 {
			b.Fatalf("%d savesets, %v", len(ss), err)
		}
	}
}

// fillSavesets inserts n savesets, 100 per tape, in one transaction.
func fillSavesets(b *testing.B, c *Catalog, n int) {
	b.Helper()
	err := c.write(func(tx *txn) error {
		for i := 0; i < n; i++ {
			var id int64
			if err := tx.QueryRow(`INSERT INTO savesets (` + savesetColumns + `) VALUES (0, 'c', 's', 'full', 0, 'complete',
			NULL, NULL, '[]', '', 0, 0, 0, '', '', 0, 0, 0) RETURNING id`).Scan(&id); err != nil {
				return err
			}
			bc := fmt.Sprintf("T%03d", i/100)
			if _, err := tx.Exec(`INSERT INTO saveset_parts (saveset_id, kind, seq, barcode, file, bytes) VALUES (?, 'data', 0, ?, ?, 0)`,
				id, bc, i%100); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
