package console

import (
	"errors"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kura-backup/kura/internal/bench"
)

// benchSet is one group of a benchmark chart as the Benchmarks page's
// table shows it: its label and, per series, the median and the range of
// the runs.
type benchSet struct {
	Label  string
	Values []benchValue
}

type benchValue struct {
	Median, Range string // "" when not measured
}

// benchChart is a chart of the page: its name (the SVG's), title, unit,
// series and groups.
type benchChart struct {
	Name, Title, Unit, Note string
	Series                  []string
	Sets                    []benchSet
}

// newestBench finds the report folder under dir (one per `kura bench run
// --out`) whose results.json was written last; "" when there is none.
func newestBench(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var best string
	var at time.Time
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name(), "results.json"))
		if err != nil {
			continue
		}
		if best == "" || fi.ModTime().After(at) {
			best, at = filepath.Join(dir, e.Name()), fi.ModTime()
		}
	}
	return best, nil
}

// loadBench reads the newest report's results and charts (nil: none).
func (c *Console) loadBench() (string, *bench.Results, []bench.Chart, error) {
	dir, err := newestBench(c.opts.BenchDir)
	if err != nil || dir == "" {
		return "", nil, nil, err
	}
	res, err := bench.LoadResults(dir)
	if err != nil {
		return "", nil, nil, err
	}
	return dir, res, bench.ReportCharts(res), nil
}

// benchmarks shows the figures of the last benchmark run the server
// holds (the newest report folder under its home's benchmarks/): every
// chart of the report, drawn as the report draws it, with its numbers in
// a table, medians and the range of the runs.
func (c *Console) benchmarks(w http.ResponseWriter, r *http.Request, s *session) error {
	dir, res, charts, err := c.loadBench()
	if err != nil {
		return err
	}
	data := map[string]any{"Dir": c.opts.BenchDir}
	if res == nil {
		return c.render(w, "benchmarks", s, data)
	}
	out := make([]benchChart, 0, len(charts))
	for _, ch := range charts {
		bc := benchChart{Name: ch.Name, Title: ch.Title, Unit: ch.Unit, Note: ch.Note, Series: ch.Series}
		for g, label := range ch.Groups {
			set := benchSet{Label: strings.ReplaceAll(label, "\n", " · ")}
			for si := range ch.Series {
				v := benchValue{}
				if m := cell(ch.Values, g, si); !math.IsNaN(m) {
					v.Median = bench.FormatValue(m)
					if lo, hi := cell(ch.Lo, g, si), cell(ch.Hi, g, si); !math.IsNaN(lo) && !math.IsNaN(hi) && hi > lo {
						v.Range = bench.FormatValue(lo) + "–" + bench.FormatValue(hi)
					}
				}
				set.Values = append(set.Values, v)
			}
			bc.Sets = append(bc.Sets, set)
		}
		out = append(out, bc)
	}
	data["Run"], data["Results"], data["Charts"] = filepath.Base(dir), res, out
	return c.render(w, "benchmarks", s, data)
}

// benchChartSVG serves one chart of the page as SVG (an img on the page:
// the Content-Security-Policy allows images of the console's own).
func (c *Console) benchChartSVG(w http.ResponseWriter, r *http.Request, s *session) error {
	_, _, charts, err := c.loadBench()
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(r.PathValue("name"), ".svg")
	for _, ch := range charts {
		if ch.Name == name {
			b, err := ch.SVG()
			if err != nil {
				return err
			}
			w.Header().Set("Content-Type", "image/svg+xml")
			w.Header().Set("Cache-Control", "no-store")
			_, err = w.Write(b)
			return err
		}
	}
	return refuse(http.StatusNotFound, "no chart %q", name)
}

func cell(grid [][]float64, g, s int) float64 {
	if g < len(grid) && s < len(grid[g]) {
		return grid[g][s]
	}
	return math.NaN()
}
