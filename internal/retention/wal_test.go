package retention

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// parseWALScenario reads a testdata/wal file above the separator:
//
//	# comment
//	base 10 db1 main 2026-11-10T01:00    a kept base backup of cluster main
//	base 11 db1 - 2026-11-05T01:00       one that names no cluster
//	wal 1 db1 main 2026-11-09T01:00      an archived WAL file
func parseWALScenario(text string) ([]WALFile, []BaseBackup, error) {
	var files []WALFile
	var bases []BaseBackup
	s := bufio.NewScanner(strings.NewReader(text))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 || (f[0] != "base" && f[0] != "wal") {
			return nil, nil, fmt.Errorf("line %d %q: want base|wal ID CLIENT CLUSTER TIME", n, line)
		}
		id, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		at, err := time.Parse(timeLayout, f[4])
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		cluster := f[3]
		if f[0] == "base" {
			if cluster == "-" {
				cluster = ""
			}
			bases = append(bases, BaseBackup{ID: id, Client: f[2], Cluster: cluster, Created: at})
		} else {
			files = append(files, WALFile{ID: id, Client: f[2], Cluster: cluster, Created: at})
		}
	}
	return files, bases, s.Err()
}

func renderWAL(ds []Decision) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		verdict := "expire"
		if d.Keep {
			verdict = "keep"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", d.ID, verdict, d.Rule, d.Reason)
	}
	tw.Flush()
	return b.String()
}

// WAL retention per cluster, as golden tables (go test -update rewrites
// them; review the diff): each WAL file is judged against the oldest kept
// base backup of its own cluster.
func TestWALGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "wal", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/wal/*.txt: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, found := strings.Cut(string(raw), separator+"\n")
			wal, bases, err := parseWALScenario(input)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			ds := DecideWAL(wal, bases)
			checkWALInvariants(t, wal, bases, ds)
			got := renderWAL(ds)
			if *update {
				if err := os.WriteFile(file, []byte(input+separator+"\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !found {
				t.Fatalf("%s has no %q section (run go test -update)", file, separator)
			}
			if got != want {
				t.Errorf("%s: decisions differ (run go test -update and review the diff)\n got:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

// checkWALInvariants: one decision per file, in ID order; a file is
// expired only when a base backup of its own cluster (or, on a client
// that archives one cluster, an unnamed one) was made after it; and the
// decisions do not depend on the input order.
func checkWALInvariants(t *testing.T, wal []WALFile, bases []BaseBackup, ds []Decision) {
	t.Helper()
	if len(ds) != len(wal) {
		t.Fatalf("%d decisions for %d WAL files", len(ds), len(wal))
	}
	byID := map[int64]WALFile{}
	for _, f := range wal {
		byID[f.ID] = f
	}
	clusters := map[string]map[string]bool{}
	for _, f := range wal {
		if clusters[f.Client] == nil {
			clusters[f.Client] = map[string]bool{}
		}
		clusters[f.Client][f.Cluster] = true
	}
	for _, b := range bases {
		if b.Cluster != "" {
			if clusters[b.Client] == nil {
				clusters[b.Client] = map[string]bool{}
			}
			clusters[b.Client][b.Cluster] = true
		}
	}
	for i, d := range ds {
		if i > 0 && ds[i-1].ID > d.ID {
			t.Errorf("decisions not in ID order at %d", d.ID)
		}
		if d.Keep {
			continue
		}
		f := byID[d.ID]
		justified := false
		for _, b := range bases {
			ours := b.Client == f.Client && (b.Cluster == f.Cluster || b.Cluster == "" && len(clusters[f.Client]) == 1)
			if ours && b.Created.After(f.Created) {
				justified = true
			}
		}
		if !justified {
			t.Errorf("WAL file %d (%s/%s) expired with no later base backup of its cluster", d.ID, f.Client, f.Cluster)
		}
	}
	rev := make([]WALFile, len(wal))
	for i, f := range wal {
		rev[len(wal)-1-i] = f
	}
	revB := make([]BaseBackup, len(bases))
	for i, b := range bases {
		revB[len(bases)-1-i] = b
	}
	if again := renderWAL(DecideWAL(rev, revB)); again != renderWAL(ds) {
		t.Errorf("the decisions depend on the input order:\n%s\nvs\n%s", again, renderWAL(ds))
	}
}
