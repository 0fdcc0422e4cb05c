package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Chart names (files chart-NAME.svg and chart-NAME.png in the report
// folder).
const (
	chartTable55     = "chart-table-5-1-5-5"
	chartDrives      = "chart-drives"
	chartLink        = "chart-link-" // + the link's index
	chartFiles       = "chart-files"
	chartFilesDelete = "chart-files-delete"
	chartPhases      = "chart-phases"
	chartPeersBackup = "chart-peers-backup"
	chartPeersRest   = "chart-peers-restore"
)

// ReportCharts are the charts of a run, each with at least one measured
// value; the report refers to them by name. They depend only on res.
func ReportCharts(res *Results) []Chart {
	sets := setNames(res)
	var out []Chart
	keep := func(c Chart) {
		// Drop series with no value, and the chart when none is left.
		var series []string
		var idx []int
		for s := range c.Series {
			for g := range c.Groups {
				if !math.IsNaN(c.Values[g][s]) {
					series = append(series, c.Series[s])
					idx = append(idx, s)
					break
				}
			}
		}
		if len(series) == 0 {
			return
		}
		vals := make([][]float64, len(c.Groups))
		for g := range c.Groups {
			for _, s := range idx {
				vals[g] = append(vals[g], c.Values[g][s])
			}
		}
		c.Series, c.Values = series, vals
		c.Lo, c.Hi = pick(c.Lo, idx), pick(c.Hi, idx)
		out = append(out, c)
	}
	grid := func(groups, series int) [][]float64 {
		v := make([][]float64, groups)
		for g := range v {
			v[g] = make([]float64, series)
			for s := range v[g] {
				v[g][s] = math.NaN()
			}
		}
		return v
	}
	// measure sets value [g][s] of c to the median run's, and its error
	// bar to the lowest and highest of the runs.
	measure := func(c *Chart, g, s int, keep func(Run) bool, value func(Run) float64) {
		if c.Lo == nil {
			c.Lo, c.Hi = grid(len(c.Values), len(c.Series)), grid(len(c.Values), len(c.Series))
		}
		r, _, ok := res.Median(keep)
		if !ok {
			return
		}
		c.Values[g][s] = value(r)
		c.Lo[g][s], c.Hi[g][s] = res.Spread(keep, value)
	}
	avgMiB := func(r Run) float64 { return r.AvgKBps / 1024 }
	wallMiB := func(r Run) float64 { return r.MiBps }

	// Table 5-1 and 5-5.
	c := Chart{Name: chartTable55, Title: "Backup by block size - buffer: local (Table 5-1), through an agent (Table 5-5)",
		Unit: "MiB/s", Series: []string{"local", "through an agent on loopback"},
		Note: fmt.Sprintf("Job Monitor average, median of %d run(s); kura backup --compress %s", res.Repeats, res.Compress)}
	for _, s := range sets {
		for _, cb := range Combos {
			c.Groups = append(c.Groups, fmt.Sprintf("%s\n%d-%d KiB", s, cb.Block>>10, cb.Buffer>>10))
		}
	}
	c.Values = grid(len(c.Groups), 2)
	for i, s := range sets {
		for j, cb := range Combos {
			for k, test := range []string{TestTable51, TestTable55} {
				measure(&c, i*len(Combos)+j, k, func(r Run) bool {
					return r.Test == test && r.Phase == PhaseBackup && r.Set == s && r.Block == cb.Block && r.Buffer == cb.Buffer
				}, avgMiB)
			}
		}
	}
	keep(c)

	// Drives.
	c = Chart{Name: chartDrives, Title: "One source on one drive, split over two, two agents at once",
		Unit: "MiB/s", Series: []string{"one job, one drive", "one source, two drives", "two agents, two drives"},
		Note: "bytes of the set over wall-clock time from submission to the end of the last job"}
	c.Groups = sets
	c.Values = grid(len(sets), len(drivesVariants))
	for i, s := range sets {
		for k, v := range drivesVariants {
			measure(&c, i, k, func(r Run) bool { return r.Test == TestDrives && r.Set == s && r.Variant == v }, wallMiB)
		}
	}
	keep(c)

	// Link × level, one chart per link.
	for li, l := range Links {
		c = Chart{Name: fmt.Sprintf("%s%d", chartLink, li+1), Title: "db dump over a " + l.Name + " link: backup time by level",
			Unit: "seconds", Series: []string{"time (Job Monitor)"},
			Note: "under each level: the bytes sent; link emulated with the agent's --bwlimit on loopback; lower is better"}
		if l.BPS == 0 {
			c.Title = "db dump over an unlimited link (loopback): backup time by level"
			c.Note = "under each level: the bytes sent; no --bwlimit; lower is better"
		}
		c.Values = grid(len(LinkLevels), 1)
		c.Lo, c.Hi = grid(len(LinkLevels), 1), grid(len(LinkLevels), 1)
		for i, lv := range LinkLevels {
			label := lv
			if r, ok := linkMedian(res, l.Name, lv); ok {
				c.Values[i][0] = linkTime(r)
				c.Lo[i][0], c.Hi[i][0] = res.Spread(func(r Run) bool { return r.Test == TestLink && r.Link == l.Name && r.Level == lv }, linkTime)
				label += "\n" + formatBytes(r.OutBytes)
			}
			c.Groups = append(c.Groups, label)
		}
		keep(c)
	}

	// Files (seed 002).
	c = Chart{Name: chartFiles, Title: "Small, medium and huge files: Kura vs a plain copy",
		Unit: "MiB/s", Series: []string{"Kura read (backup)", "Kura write (restore)", "cp -a"},
		Note: "wall-clock; kura backup --compress none fsyncs, kura restore and cp -a do not"}
	c.Values = grid(len(res.FileSets), 3)
	for i, fs := range res.FileSets {
		c.Groups = append(c.Groups, fs.Label)
		for k, tp := range [][2]string{{ToolKura, PhaseBackup}, {ToolKura, PhaseRestore}, {ToolCp, PhaseCopy}} {
			measure(&c, i, k, func(r Run) bool {
				return r.Test == TestFiles && r.Set == fs.Name && r.Tool == tp[0] && r.Phase == tp[1]
			}, wallMiB)
		}
	}
	keep(c)
	c = Chart{Name: chartFilesDelete, Title: "Deleting small, medium and huge files", Unit: "files/s",
		Series: []string{"Kura restore target", "cp -a copy"}, Note: "rm -rf; Kura's expiry of savesets comes with retention"}
	c.Values = grid(len(res.FileSets), 2)
	for i, fs := range res.FileSets {
		c.Groups = append(c.Groups, fs.Label)
		for k, tool := range []string{ToolKura, ToolCp} {
			measure(&c, i, k, func(r Run) bool {
				return r.Test == TestFiles && r.Set == fs.Name && r.Tool == tool && r.Phase == PhaseDelete
			},
				func(r Run) float64 { return r.FilesPerSec })
		}
	}
	keep(c)

	// Phases (seed 001).
	c = Chart{Name: chartPhases, Title: "Backup, verify and restore phases", Unit: "MiB/s",
		Series: []string{"backup", "verify", "restore"}, Groups: sets,
		Note: fmt.Sprintf("wall-clock, block %d KiB, buffer %d KiB", DefaultCombo.Block>>10, DefaultCombo.Buffer>>10)}
	c.Values = grid(len(sets), 3)
	for i, s := range sets {
		for k, ph := range []struct{ test, phase string }{{TestTable51, PhaseBackup}, {TestPhases, PhaseVerify}, {TestPhases, PhaseRestore}} {
			measure(&c, i, k, func(r Run) bool {
				return r.Test == ph.test && r.Tool == ToolKura && r.Phase == ph.phase && r.Set == s && r.Block == DefaultCombo.Block && r.Buffer == DefaultCombo.Buffer
			}, wallMiB)
		}
	}
	if hasTest(res, TestPhases) {
		keep(c)
	}

	// Peers.
	kuraOrPeer := func(r Run) bool {
		if r.Tool == ToolKura {
			return (r.Test == TestTable51 || r.Test == TestPhases) && r.Block == DefaultCombo.Block && r.Buffer == DefaultCombo.Buffer
		}
		return r.Test == TestPeers
	}
	for _, pc := range []struct {
		name, title, phase string
		tools, labels      []string
	}{
		{chartPeersBackup, "Backup: Kura and its peers", PhaseBackup, []string{ToolKura, ToolTar, ToolTarZstd, ToolRestic},
			[]string{"kura backup", "tar -cf", "tar | zstd -T0", "restic backup"}},
		{chartPeersRest, "Restore: Kura and its peers", PhaseRestore, []string{ToolKura, ToolTar, ToolRestic},
			[]string{"kura restore", "tar -xf", "restic restore"}},
	} {
		if len(res.Peers) == 0 {
			break
		}
		c = Chart{Name: pc.name, Title: pc.title, Unit: "MiB/s", Series: pc.labels, Groups: sets,
			Note: "wall-clock, same data and disk; Kura and restic fsync their backups, tar does not"}
		c.Values = grid(len(sets), len(pc.tools))
		for i, s := range sets {
			for k, tool := range pc.tools {
				measure(&c, i, k, func(r Run) bool { return r.Set == s && r.Tool == tool && r.Phase == pc.phase && kuraOrPeer(r) }, wallMiB)
			}
		}
		keep(c)
	}
	return out
}

// pick keeps the columns idx of every row of a grid (nil stays nil).
func pick(grid [][]float64, idx []int) [][]float64 {
	if grid == nil {
		return nil
	}
	out := make([][]float64, len(grid))
	for g, row := range grid {
		for _, s := range idx {
			out[g] = append(out[g], row[s])
		}
	}
	return out
}

func setNames(res *Results) []string {
	sets := make([]string, 0, len(res.Data.Sets))
	for _, s := range res.Data.Sets {
		sets = append(sets, s.Name)
	}
	return sets
}

// writeCharts writes every chart as SVG and PNG into dir.
func writeCharts(dir string, charts []Chart) error {
	for _, c := range charts {
		svg, err := c.SVG()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.Name+".svg"), svg, 0o644); err != nil {
			return err
		}
		b, err := c.PNG()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.Name+".png"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
