package monitor

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kura-backup/kura/internal/units"
)

// Render writes the human Job Monitor block printed at the end of a job:
//
//	Job 12 (backup, full)  saveset 7   completed with warnings
//	Files 105,005   Source 21.0 GiB   Media 19.0 GiB   Ratio 1.11:1
//	Average 30,317 KB/s   Peak 38,161 KB/s   Elapsed 12m 05s   Tapes KUR001, KUR002   Warnings 3
//
// then one line per phase with its own figures, in aligned columns. Write
// errors are not reported: the caller owns w (use a bufio.Writer or check
// its own error state when it matters).
func Render(w io.Writer, f Figures) {
	var b strings.Builder
	if f.JobID != 0 {
		b.WriteString("Job " + strconv.FormatInt(f.JobID, 10))
	} else {
		b.WriteString("Total") // the sum of several jobs (the streams of a split backup)
	}
	kind := f.Kind
	if kind == "" {
		kind = "job"
	}
	if f.Level != "" {
		fmt.Fprintf(&b, " (%s, %s)", kind, f.Level)
	} else {
		fmt.Fprintf(&b, " (%s)", kind)
	}
	if f.SavesetID != 0 {
		b.WriteString("  saveset " + strconv.FormatInt(f.SavesetID, 10))
	}
	b.WriteString("   " + statusText(f.Status) + "\n")

	fmt.Fprintf(&b, "Files %s   Source %s   Media %s   Ratio %s\n",
		units.Thousands(f.Files), units.FormatSize(f.SourceBytes), units.FormatSize(f.MediaBytes), ratioText(f.CompressionRatio))

	fmt.Fprintf(&b, "Average %s KB/s   Peak %s KB/s   Elapsed %s",
		kbps(f.AvgKBps), kbps(f.PeakKBps), duration(f.ElapsedSeconds))
	if len(f.Tapes) > 0 {
		b.WriteString("   Tapes " + strings.Join(f.Tapes, ", "))
	}
	b.WriteString("   Warnings " + units.Thousands(f.Warnings) + "\n")
	io.WriteString(w, b.String())

	if len(f.Phases) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, p := range f.Phases {
		fmt.Fprintf(tw, "  %s\tFiles %s\tSource %s\tMedia %s\tElapsed %s\tAverage %s KB/s\tPeak %s KB/s\n",
			p.Name, units.Thousands(p.Files), units.FormatSize(p.SourceBytes), units.FormatSize(p.MediaBytes),
			duration(p.ElapsedSeconds), kbps(p.AvgKBps), kbps(p.PeakKBps))
	}
	tw.Flush()
}

// statusText turns a job status into the words of the Job Monitor.
func statusText(s string) string {
	switch s {
	case "succeeded":
		return "completed"
	case "warnings":
		return "completed with warnings"
	case "":
		return "running"
	}
	return s
}

func ratioText(r string) string {
	if r == "" {
		return "-"
	}
	return r
}

// kbps formats a KB/s figure rounded to a whole number: "30,317".
func kbps(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return units.Thousands(int64(math.Round(v)))
}

// duration formats seconds as "4.27s" under a minute, "12m 05s", or
// "1h 02m 05s" from an hour up, rounded to the second.
func duration(sec float64) string {
	if math.IsNaN(sec) || sec < 0 {
		sec = 0
	}
	if sec < 60 {
		return fmt.Sprintf("%.2fs", sec)
	}
	s := int64(math.Round(sec))
	h, m := s/3600, s/60%60
	s %= 60
	if h > 0 {
		return fmt.Sprintf("%dh %02dm %02ds", h, m, s)
	}
	return fmt.Sprintf("%dm %02ds", m, s)
}
