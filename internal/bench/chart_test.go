package bench

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
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

// svgTexts parses an SVG document strictly and returns its root's
// width and height, the text of its text elements, and how many paths
// it draws.
func svgTexts(t *testing.T, doc []byte) (w, h string, texts []string, paths int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	depth, inText := 0, false
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
						w = a.Value
					case "height":
						h = a.Value
					}
				}
			}
			depth++
			inText = e.Name.Local == "text"
			if e.Name.Local == "path" {
				paths++
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			depth--
			inText = false
		}
	}
	return w, h, texts, paths
}

// The SVG is a well-formed standalone document with the title, the unit,
// every group label line, a legend entry per series, every value over its
// bar, "n/a" where a value was not measured, and the note; the min–max
// error bars are three strokes each.
func TestChartSVG(t *testing.T) {
	c := testChart()
	doc, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	w, h, texts, plain := svgTexts(t, doc)
	if w == "" || h == "" {
		t.Errorf("the svg element has no size (%q × %q)", w, h)
	}
	for _, want := range []string{"Backup <local> & remote", "MiB/s", "test1", "32-257 KiB", "256-8193 KiB", "test3",
		"local", "remote", "120", "95.5", "8.25", "310", "0.4", "n/a", "median of 3 runs"} {
		if !slices.Contains(texts, want) {
			t.Errorf("the SVG has no text %q (it has %q)", want, texts)
		}
	}
	c.Lo = [][]float64{{100, 90}, {math.NaN(), 8}, {280, 0.4}}
	c.Hi = [][]float64{{130, 99}, {math.NaN(), 9}, {310, 0.4}} // 0.4: one value, no bar; 310 keeps the axis
	doc, err = c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, bars := svgTexts(t, doc); bars != plain+4*3 {
		t.Errorf("with four min-max ranges the SVG draws %d paths, without %d; want 12 more (three strokes each)", bars, plain)
	}
}

// The PNG is the chart's size at pngDPI, and each series' bars are in its
// palette colour.
func TestChartPNG(t *testing.T) {
	c := testChart()
	b, err := c.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	w, h := c.size()
	if got, want := img.Bounds().Size(), image.Pt(int(math.Ceil(w.Dots(pngDPI))), int(math.Ceil(h.Dots(pngDPI)))); got != want {
		t.Errorf("the PNG is %v, want %v", got, want)
	}
	count := map[color.RGBA]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			count[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}]++
		}
	}
	// local: 120 and 310 are tall bars; remote: 95.5 is one, the rest small.
	for s := range c.Series {
		if n := count[palette[s]]; n < 5000 {
			t.Errorf("series %s: %d pixels of its colour %v; want its bars (thousands)", c.Series[s], n, palette[s])
		}
	}
	if n := count[palette[2]]; n != 0 {
		t.Errorf("%d pixels of a third series' colour in a chart of two series", n)
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 310.4: "310", 95.54: "95.5", 8.254: "8.25", 0.4: "0.4", 0.0123: "0.012"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
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
		// Every measured value has its runs' range around it.
		for g := range c.Groups {
			for s := range c.Series {
				v, lo, hi := value(c.Values, g, s), value(c.Lo, g, s), value(c.Hi, g, s)
				if finite(v) && !(lo <= v && v <= hi) {
					t.Errorf("%s %q %s: %v outside its runs' range %v–%v", c.Name, c.Groups[g], c.Series[s], v, lo, hi)
				}
			}
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
	lo, hi := res.Spread(func(r Run) bool {
		return r.Test == TestTable51 && r.Phase == PhaseBackup && r.Set == "test1" && r.Block == Combos[0].Block && r.Buffer == Combos[0].Buffer
	}, func(r Run) float64 { return r.AvgKBps / 1024 })
	if c.Lo[0][0] != lo || c.Hi[0][0] != hi || !(lo < hi) {
		t.Errorf("first group's local error bar %v–%v, want the runs' %v–%v (and a range: the fake has several runs)", c.Lo[0][0], c.Hi[0][0], lo, hi)
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
