package bench

import (
	"math"
	"strings"
)

// ObjectRow is one set of the object-store test: the medians of each side
// and the S3 ÷ folder ratio of each phase (median of the per-pair
// ratios).
type ObjectRow struct {
	Set                                 string
	FolderBackupMBps, S3BackupMBps      float64
	FolderRestoreMBps, S3RestoreMBps    float64
	BackupRatio, RestoreRatio           float64
	BackupPairRatios, RestorePairRatios []float64
}

// ObjectRows are the object-store test's rows, one per set in the order
// they ran.
func ObjectRows(res *Results) []ObjectRow {
	var rows []ObjectRow
	var sets []string
	for _, r := range res.Runs {
		if r.Test == TestObject && !containsString(sets, r.Set) {
			sets = append(sets, r.Set)
		}
	}
	for _, set := range sets {
		row := ObjectRow{Set: set}
		for _, phase := range []string{PhaseBackup, PhaseRestore} {
			folder, s3 := objectRunsOf(res, set, sideFolder, phase), objectRunsOf(res, set, sideS3, phase)
			fm, sm := medianOf(mapRuns(folder, decimalMBps)), medianOf(mapRuns(s3, decimalMBps))
			var ratios []float64
			for _, pair := range pairsOf(folder, s3) {
				ratio := math.NaN()
				f, fok := runOfPair(folder, pair)
				s, sok := runOfPair(s3, pair)
				if fok && sok {
					ratio = decimalMBps(s) / decimalMBps(f)
				}
				ratios = append(ratios, ratio)
			}
			if phase == PhaseBackup {
				row.FolderBackupMBps, row.S3BackupMBps, row.BackupPairRatios, row.BackupRatio = fm, sm, ratios, medianOf(ratios)
			} else {
				row.FolderRestoreMBps, row.S3RestoreMBps, row.RestorePairRatios, row.RestoreRatio = fm, sm, ratios, medianOf(ratios)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// objectRunsOf are the successful runs of a set's side and phase.
func objectRunsOf(res *Results, set, side, phase string) []Run {
	var out []Run
	for _, r := range res.Runs {
		if r.Test == TestObject && r.Set == set && r.Library == side && r.Phase == phase && r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// writeObject is the object-store section of the report.
func writeObject(p func(string, ...any), res *Results) {
	p("## Object store ÷ folder library (issue 13)")
	p("")
	p("Each set runs in interleaved pairs: a fresh home with one library — its tapes in the library folder, or in an S3 bucket (`kura vtl create --s3`, 64 MiB chunk objects) — then `kura backup --vtl %s --json SET` and `kura restore ID --to DIR --json`. "+
		"Both sides use block %d KiB and buffer %d KiB; the order alternates (folder first in odd pairs). "+
		"MB/s = 10^6 bytes of the set per second of wall-clock time of the command; figures are medians over the pairs, the ratio the median of the per-pair S3 ÷ folder ratios.",
		benchLibrary, DefaultCombo.Block>>10, DefaultCombo.Buffer>>10)
	p("")
	p("| set | backup folder MB/s | backup S3 MB/s | S3 ÷ folder (pairs) | median | restore folder MB/s | restore S3 MB/s | S3 ÷ folder (pairs) | median |")
	p("|---|---:|---:|---|---:|---:|---:|---|---:|")
	join := func(xs []float64) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fixed("%.2f", x)
		}
		return strings.Join(s, " / ")
	}
	for _, r := range ObjectRows(res) {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", r.Set,
			fixed("%.1f", r.FolderBackupMBps), fixed("%.1f", r.S3BackupMBps), join(r.BackupPairRatios), fixed("%.2f", r.BackupRatio),
			fixed("%.1f", r.FolderRestoreMBps), fixed("%.1f", r.S3RestoreMBps), join(r.RestorePairRatios), fixed("%.2f", r.RestoreRatio))
	}
	p("")
}
