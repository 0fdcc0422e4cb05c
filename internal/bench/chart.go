package bench

import (
	"bytes"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A Chart is a grouped bar chart like the seeds' graphs: for every group
// (a set, a combination, a link) one bar per series (local and remote,
// one or two drives, a compression level), each the median of its runs
// with an error bar from the lowest to the highest run. It is drawn with
// gonum.org/v1/plot (real fonts, axes, a legend), the same picture as SVG
// and as PNG.
type Chart struct {
	Name   string // file name without extension
	Title  string
	Unit   string   // the value axis, e.g. "MiB/s"
	Groups []string // "\n" breaks a label into lines
	Series []string
	Values [][]float64 // [group][series]; NaN = not measured
	// Lo and Hi are the lowest and highest value of the runs behind each
	// value ([group][series]; nil or NaN: no error bar, e.g. one run).
	Lo, Hi [][]float64
	Note   string // one line under the chart
}

// palette is Okabe and Ito's colour-blind-safe set.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, {0xE6, 0x9F, 0x00, 0xff}, {0x00, 0x9E, 0x73, 0xff},
	{0xCC, 0x79, 0xA7, 0xff}, {0x56, 0xB4, 0xE9, 0xff}, {0xD5, 0x5E, 0x00, 0xff}, {0xF0, 0xE4, 0x42, 0xff},
}

var (
	colorInk   = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colorFaint = color.RGBA{0x66, 0x66, 0x66, 0xff}
	colorGrid  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
)

// value is [g][s] of a grid, NaN when it has none.
func value(grid [][]float64, g, s int) float64 {
	if g < len(grid) && s < len(grid[g]) {
		return grid[g][s]
	}
	return math.NaN()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Chart sizes: the PNG is drawn at pngDPI.
const (
	chartHeight = 4.5 * vg.Inch
	pngDPI      = 144
)

// size is the chart's width and height: each group as wide as its bars
// or its widest label line, the value axis and the legend beside them.
func (c Chart) size() (vg.Length, vg.Length) {
	p, leg := c.plot()
	groupW := vg.Length(len(c.Series))*0.3*vg.Inch + 0.15*vg.Inch
	for _, g := range c.Groups {
		for _, line := range strings.Split(g, "\n") {
			groupW = max(groupW, p.X.Tick.Label.Width(line)+0.15*vg.Inch)
		}
	}
	w := vg.Length(len(c.Groups))*groupW + 1.0*vg.Inch + legendWidth(leg, c.Series)
	// The title is centred over the plot, beside the legend: room for it whole.
	w = max(w, p.Title.TextStyle.Width(c.Title)+0.3*vg.Inch+legendWidth(leg, c.Series))
	return max(w, 7*vg.Inch), chartHeight
}

// legendWidth is the width of the legend's column.
func legendWidth(leg plot.Legend, series []string) vg.Length {
	w := vg.Length(0)
	for _, s := range series {
		w = max(w, leg.TextStyle.Width(s))
	}
	return w + leg.ThumbnailWidth + 0.35*vg.Inch
}

// plot builds the chart's plot and its legend, drawn beside it.
func (c Chart) plot() (*plot.Plot, plot.Legend) {
	p := plot.New()
	leg := plot.NewLegend()
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &leg.TextStyle.Font} {
		f.Variant = "Sans" // Liberation Sans, embedded in gonum's font cache
	}
	p.Title.Text = c.Title
	p.Title.Padding = vg.Points(8)
	p.Title.TextStyle.Font.Size = 13
	p.Y.Label.Text = c.Unit
	p.X.Label.Text = c.Note
	p.X.Label.TextStyle.Color = colorFaint
	p.X.Label.TextStyle.Font.Size = 9
	p.Y.Min = 0
	top := 0.0
	for g := range c.Groups {
		for s := range c.Series {
			for _, v := range []float64{value(c.Values, g, s), value(c.Hi, g, s)} {
				if finite(v) {
					top = max(top, v)
				}
			}
		}
	}
	if top <= 0 {
		top = 1
	}
	p.Y.Max = top * 1.12 // room for the value labels
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // groups are categories: no vertical lines
	grid.Horizontal.Color = colorGrid
	p.Add(grid)
	p.Add(&groupedBars{c: c})
	p.NominalX(c.Groups...)
	p.X.Tick.Label.Font.Size = 10
	p.Y.Tick.Label.Font.Size = 10
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = 10
	for s, name := range c.Series {
		leg.Add(name, swatch(palette[s%len(palette)]))
	}
	return p, leg
}

// render draws the chart onto a canvas of the given format: the plot,
// and its legend in a column on the right, out of the bars' way.
func (c Chart) render(cv vg.CanvasWriterTo, w, h vg.Length) error {
	p, leg := c.plot()
	dc := draw.New(cv)
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: 0, Y: h}, {X: w, Y: h}, {X: w, Y: 0}})
	legendW := legendWidth(leg, c.Series)
	plotArea, legendArea := dc, dc
	plotArea.Max.X -= legendW
	legendArea.Min.X = plotArea.Max.X + 0.1*vg.Inch
	legendArea.Max.Y -= 0.45 * vg.Inch // below the title's height
	p.Draw(plotArea)
	leg.Draw(legendArea)
	return nil
}

// SVG renders the chart as a standalone SVG document (its fonts named,
// not embedded: a browser draws them with its own sans-serif).
func (c Chart) SVG() ([]byte, error) {
	w, h := c.size()
	cv := vgsvg.New(w, h)
	if err := c.render(cv, w, h); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// PNG renders the chart as a PNG image at pngDPI.
func (c Chart) PNG() ([]byte, error) {
	w, h := c.size()
	cv := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))}
	if err := c.render(cv, w, h); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// groupedBars draws every value of a chart: group g's bars side by side
// around x = g, each with its min–max error bar and its value above it;
// a value not measured is "n/a" on the axis.
type groupedBars struct{ c Chart }

var _ plot.Plotter = (*groupedBars)(nil)
var _ plot.DataRanger = (*groupedBars)(nil)

// groupSpan is the part of a group's width its bars take.
const groupSpan = 0.8

func (b *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(len(b.c.Groups)) - 0.5, 0, 0
}

func (b *groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(b.c.Series)
	if n == 0 {
		return
	}
	w := groupSpan / float64(n)
	label := draw.TextStyle{Color: colorInk, Font: font.From(p.X.Tick.Label.Font, 8), XAlign: draw.XCenter,
		Handler: p.X.Tick.Label.Handler}
	faint := label
	faint.Color = colorFaint
	whisker := draw.LineStyle{Color: colorInk, Width: vg.Points(1)}
	for g := range b.c.Groups {
		for s := range n {
			x0 := float64(g) - groupSpan/2 + float64(s)*w
			xl, xr, xm := trX(x0+w*0.06), trX(x0+w*0.94), trX(x0+w/2)
			v := value(b.c.Values, g, s)
			if !finite(v) {
				c.FillText(faint, vg.Point{X: xm, Y: trY(0) + vg.Points(3)}, "n/a")
				continue
			}
			bottom, top := trY(0), trY(v)
			c.FillPolygon(palette[s%len(palette)], c.ClipPolygonY([]vg.Point{{X: xl, Y: bottom}, {X: xl, Y: top}, {X: xr, Y: top}, {X: xr, Y: bottom}}))
			above := top
			lo, hi := value(b.c.Lo, g, s), value(b.c.Hi, g, s)
			if finite(lo) && finite(hi) && hi > lo {
				ylo, yhi := trY(lo), trY(hi)
				capW := (xr - xl) / 4
				c.StrokeLine2(whisker, xm, ylo, xm, yhi)
				c.StrokeLine2(whisker, xm-capW, ylo, xm+capW, ylo)
				c.StrokeLine2(whisker, xm-capW, yhi, xm+capW, yhi)
				above = max(above, yhi)
			}
			c.FillText(label, vg.Point{X: xm, Y: above + vg.Points(2)}, FormatValue(v))
		}
	}
}

// swatch is a legend entry's filled square.
type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(color.RGBA(s), []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}})
}

// FormatValue writes a value with three significant digits at most, as
// the charts label their bars.
func FormatValue(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}
