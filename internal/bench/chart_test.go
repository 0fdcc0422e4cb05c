package bench

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

func testChart() Chart {
	return Chart{Name: "chart-test", Title: "Backup <local> & remote", Unit: "MiB/s",
		Groups: []string{"test1\n32-257 KiB", "test2\n256-8193 KiB", "test3"},
		Series: []string{"local", "remote"},
		Values: [][]float64{{120, 95.5}, {math.NaN(), 8.25}, {310, 0.4}},
		Note:   "median of 3 runs"}
}

// svgCounts parses an SVG document strictly and counts its elements by
// name, and the bars (rects of class bar).
func svgCounts(t *testing.T, doc []byte) (map[string]int, int, [2]string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	counts := map[string]int{}
	bars := 0
	var size [2]string
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element is %v, want svg in the SVG namespace", e.Name)
				}
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "width":
						size[0] = a.Value
					case "height":
						size[1] = a.Value
					}
				}
			}
			depth++
			counts[e.Name.Local]++
			for _, a := range e.Attr {
				if e.Name.Local == "rect" && a.Name.Local == "class" && a.Value == "bar" {
					bars++
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	return counts, bars, size
}

func TestChartSVGIsValidAndHasABarPerValue(t *testing.T) {
	c := testChart()
	doc := c.SVG()
	counts, bars, size := svgCounts(t, doc)
	if bars != 5 { // six values, one not measured
		t.Errorf("%d bars, want 5", bars)
	}
	if counts["title"] < 1 || counts["text"] < 10 || counts["line"] < 3 {
		t.Errorf("elements %v: want a title, texts and grid lines", counts)
	}
	cv := c.layout()
	if size[0] != strconv.Itoa(cv.W) || size[1] != strconv.Itoa(cv.H) {
		t.Errorf("svg size %v, layout %d × %d", size, cv.W, cv.H)
	}
	s := string(doc)
	for _, want := range []string{"Backup &lt;local&gt; &amp; remote", ">n/a<", ">310<", ">8.25<", "median of 3 runs"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestChartPNGMatchesTheLayout(t *testing.T) {
	c := testChart()
	b, err := c.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	cv := c.layout()
	if img.Bounds() != image.Rect(0, 0, cv.W, cv.H) {
		t.Fatalf("PNG is %v, layout %d × %d", img.Bounds(), cv.W, cv.H)
	}
	// Every bar is filled with its series' colour, in its middle.
	n := 0
	for _, s := range cv.Shapes {
		if s.kind != shapeBar {
			continue
		}
		n++
		if s.H <= 0 {
			continue
		}
		r, g, bl, _ := img.At(s.X+s.W/2, s.Y+s.H/2).RGBA()
		want := palette[s.Series]
		if uint8(r>>8) != want.R || uint8(g>>8) != want.G || uint8(bl>>8) != want.B {
			t.Errorf("bar %d/%d: pixel (%d,%d,%d), want series colour %v", s.Group, s.Series, r>>8, g>>8, bl>>8, want)
		}
	}
	if n != 5 {
		t.Errorf("%d bars laid out, want 5", n)
	}
	// Bars are as tall as their values: 310 is the tallest, 0.4 barely shows.
	var h310, h95 int
	for _, s := range cv.Shapes {
		if s.kind == shapeBar && s.Group == 2 && s.Series == 0 {
			h310 = s.H
		}
		if s.kind == shapeBar && s.Group == 0 && s.Series == 1 {
			h95 = s.H
		}
	}
	if h310 <= 3*h95 || h95 <= 0 {
		t.Errorf("bar heights 310 → %d px, 95.5 → %d px: not in proportion", h310, h95)
	}
}

func TestFontGlyphsAreFiveBySeven(t *testing.T) {
	for r, g := range font {
		for i, row := range g {
			if len(row) != glyphW || strings.Trim(row, "#.") != "" {
				t.Errorf("glyph %q row %d = %q: want %d of # and .", r, i, row, glyphW)
			}
		}
	}
	// Every character the charts write has a glyph of its own.
	for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789 .,:-+/()%×–|<>&'" {
		if g := glyph(r); g == font['?'] && r != '?' {
			t.Errorf("no glyph for %q", r)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		top   float64
		step  float64
		ticks int
	}{{310, 100, 4}, {50, 10, 5}, {4.1, 1, 5}, {27.5, 10, 3}, {0.9, 0.2, 5}, {0, 1, 1}, {100, 20, 5}} {
		step, ticks := niceTicks(tc.top)
		if math.Abs(step-tc.step) > 1e-9 || ticks != tc.ticks {
			t.Errorf("niceTicks(%v) = %v × %d, want %v × %d", tc.top, step, ticks, tc.step, tc.ticks)
		}
		if float64(ticks)*step < tc.top {
			t.Errorf("niceTicks(%v): axis ends at %v, below the top", tc.top, float64(ticks)*step)
		}
	}
	for in, want := range map[[2]float64]string{{20, 10}: "20", {0.4, 0.2}: "0.4", {0.15, 0.05}: "0.15"} {
		if got := formatTick(in[0], in[1]); got != want {
			t.Errorf("formatTick(%v, %v) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

func TestReportChartsFromResults(t *testing.T) {
	charts := ReportCharts(fakeResults())
	names := map[string]Chart{}
	for _, c := range charts {
		names[c.Name] = c
		for g, row := range c.Values {
			if len(row) != len(c.Series) {
				t.Errorf("%s group %d: %d values for %d series", c.Name, g, len(row), len(c.Series))
			}
		}
		if len(c.Values) != len(c.Groups) {
			t.Errorf("%s: %d rows for %d groups", c.Name, len(c.Values), len(c.Groups))
		}
	}
	for _, want := range []string{chartTable55, chartDrives, chartLink + "1", chartLink + "2", chartLink + "3", chartFiles, chartFilesDelete, chartPhases, chartPeersBackup, chartPeersRest} {
		if _, ok := names[want]; !ok {
			t.Errorf("no chart %s", want)
		}
	}
	// Table 5-1 and 5-5 side by side: test1 at 32 KiB is the first group.
	c := names[chartTable55]
	if len(c.Series) != 2 || len(c.Groups) != 2*len(Combos) {
		t.Fatalf("5-1/5-5 chart: series %v, %d groups", c.Series, len(c.Groups))
	}
	res := fakeResults()
	l, _ := comboMedian(res, TestTable51, "test1", Combos[0])
	r, _ := comboMedian(res, TestTable55, "test1", Combos[0])
	if c.Values[0][0] != l.AvgKBps/1024 || c.Values[0][1] != r.AvgKBps/1024 {
		t.Errorf("first group %v, want local %v, remote %v MiB/s", c.Values[0], l.AvgKBps/1024, r.AvgKBps/1024)
	}
	// A run without remote parts draws no remote series.
	local := fakeResults()
	var keep []Run
	for _, r := range local.Runs {
		if r.Test == TestTable51 {
			keep = append(keep, r)
		}
	}
	local.Runs, local.Peers, local.FileSets = keep, nil, nil
	only := ReportCharts(local)
	if len(only) != 1 || only[0].Name != chartTable55 || len(only[0].Series) != 1 || only[0].Series[0] != "local" {
		t.Errorf("local-only charts: %+v", only)
	}
}
