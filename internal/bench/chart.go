package bench

import (
	"bytes"
	"fmt"
	"html"
	"image/color"
	"math"
	"strconv"
	"strings"
)

// A Chart is a grouped bar chart like the seeds' graphs: for every group
// (a set, a combination, a link) one bar per series (local and remote,
// one or two drives, a compression level). It is drawn once into a list
// of shapes (layout), which both the SVG and the PNG writer render, so the
// two files show the same picture. Text is measured in the PNG's bitmap
// font (6 × scale pixels per character); the SVG uses a monospace font of
// the same advance.
type Chart struct {
	Name   string // file name without extension
	Title  string
	Unit   string   // the value axis, e.g. "MiB/s"
	Groups []string // "\n" breaks a label into lines
	Series []string
	Values [][]float64 // [group][series]; NaN = not measured
	Note   string      // one line under the chart
}

// shape kinds.
const (
	shapeRect = iota
	shapeBar  // a rect that is a value
	shapeLine
	shapeText
)

// text anchors.
const (
	anchorStart = iota
	anchorMiddle
	anchorEnd
)

// A shape is one thing drawn: a rect (X, Y, W, H), a line from (X, Y) to
// (X2, Y2), or text whose baseline starts, centres or ends at (X, Y).
type shape struct {
	kind          int
	X, Y, W, H    int
	X2, Y2        int
	Color         color.RGBA
	Text          string
	Scale         int // text: glyph scale
	Anchor        int
	Series, Group int // bars: which value
}

// canvas is a laid-out chart.
type canvas struct {
	W, H   int
	Title  string
	Shapes []shape
}

// palette is Okabe and Ito's colour-blind-safe set.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, {0xE6, 0x9F, 0x00, 0xff}, {0x00, 0x9E, 0x73, 0xff},
	{0xCC, 0x79, 0xA7, 0xff}, {0x56, 0xB4, 0xE9, 0xff}, {0xD5, 0x5E, 0x00, 0xff}, {0xF0, 0xE4, 0x42, 0xff},
}

var (
	colorInk   = color.RGBA{0x22, 0x22, 0x22, 0xff}
	colorGrid  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	colorFaint = color.RGBA{0x66, 0x66, 0x66, 0xff}
	colorWhite = color.RGBA{0xff, 0xff, 0xff, 0xff}
)

// Text metrics of the bitmap font.
const (
	glyphW, glyphH = 5, 7
	advance        = glyphW + 1
)

func textWidth(s string, scale int) int { return len([]rune(s)) * advance * scale }

// layout places every shape of the chart.
func (c Chart) layout() canvas {
	const (
		big, small = 2, 1
		pad        = 16
		barW       = 30
		barGap     = 4
	)
	lineH := glyphH*big + 6
	// Group width: the bars, or the widest label line.
	groupW := len(c.Series)*(barW+barGap) - barGap + 2*pad
	labelLines := 1
	for _, g := range c.Groups {
		lines := strings.Split(g, "\n")
		labelLines = max(labelLines, len(lines))
		for _, l := range lines {
			groupW = max(groupW, textWidth(l, big)+pad)
		}
	}
	// Value axis.
	top := 0.0
	for _, row := range c.Values {
		for _, v := range row {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = max(top, v)
			}
		}
	}
	step, ticks := niceTicks(top)
	tickW := 0
	for i := 0; i <= ticks; i++ {
		tickW = max(tickW, textWidth(formatTick(float64(i)*step, step), big))
	}
	left := pad + max(tickW, textWidth(c.Unit, big)/2) + 10
	width := max(left+len(c.Groups)*groupW+pad, textWidth(c.Title, big)+2*pad, 480)
	if len(c.Groups) > 0 {
		groupW = max(groupW, (width-left-pad)/len(c.Groups)) // fill the width
	}
	plotW := len(c.Groups) * groupW

	cv := canvas{W: width, Title: c.Title}
	add := func(s shape) { cv.Shapes = append(cv.Shapes, s) }
	y := pad + glyphH*big
	add(shape{kind: shapeText, X: pad, Y: y, Text: c.Title, Scale: big, Color: colorInk})

	// Legend, wrapped to the width.
	y += lineH + 4
	x := pad
	for i, s := range c.Series {
		w := 14 + 6 + textWidth(s, big) + 20
		if x > pad && x+w > width-pad {
			x, y = pad, y+lineH
		}
		add(shape{kind: shapeRect, X: x, Y: y - glyphH*big, W: 14, H: 14, Color: palette[i%len(palette)]})
		add(shape{kind: shapeText, X: x + 20, Y: y, Text: s, Scale: big, Color: colorInk})
		x += w
	}
	// Unit above the axis.
	y += lineH + 4
	add(shape{kind: shapeText, X: left, Y: y, Text: c.Unit, Scale: big, Color: colorFaint, Anchor: anchorMiddle})
	plotTop := y + 18
	plotH := 280
	plotBottom := plotTop + plotH
	scaleY := func(v float64) int {
		if step <= 0 {
			return plotBottom
		}
		return plotBottom - int(math.Round(v/(step*float64(ticks))*float64(plotH)))
	}
	for i := 0; i <= ticks; i++ {
		v := float64(i) * step
		ty := scaleY(v)
		add(shape{kind: shapeLine, X: left, Y: ty, X2: left + plotW, Y2: ty, Color: colorGrid})
		add(shape{kind: shapeText, X: left - 8, Y: ty + glyphH*big/2, Text: formatTick(v, step), Scale: big, Color: colorFaint, Anchor: anchorEnd})
	}
	add(shape{kind: shapeLine, X: left, Y: plotTop, X2: left, Y2: plotBottom, Color: colorInk})
	add(shape{kind: shapeLine, X: left, Y: plotBottom, X2: left + plotW, Y2: plotBottom, Color: colorInk})

	for g, label := range c.Groups {
		gx := left + g*groupW
		barsW := len(c.Series)*(barW+barGap) - barGap
		bx := gx + (groupW-barsW)/2
		for s := range c.Series {
			v := math.NaN()
			if g < len(c.Values) && s < len(c.Values[g]) {
				v = c.Values[g][s]
			}
			x := bx + s*(barW+barGap)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				add(shape{kind: shapeText, X: x + barW/2, Y: plotBottom - 4, Text: "n/a", Scale: small, Color: colorFaint, Anchor: anchorMiddle})
				continue
			}
			ty := scaleY(v)
			add(shape{kind: shapeBar, X: x, Y: ty, W: barW, H: plotBottom - ty, Color: palette[s%len(palette)], Series: s, Group: g})
			add(shape{kind: shapeText, X: x + barW/2, Y: ty - 4, Text: formatValue(v), Scale: small, Color: colorInk, Anchor: anchorMiddle})
		}
		for i, l := range strings.Split(label, "\n") {
			add(shape{kind: shapeText, X: gx + groupW/2, Y: plotBottom + 8 + glyphH*big + i*lineH, Text: l, Scale: big, Color: colorInk, Anchor: anchorMiddle})
		}
	}
	cv.H = plotBottom + 8 + labelLines*lineH + pad
	if c.Note != "" {
		cv.H += lineH
		add(shape{kind: shapeText, X: pad, Y: cv.H - pad, Text: c.Note, Scale: small, Color: colorFaint})
		cv.W = max(cv.W, textWidth(c.Note, small)+2*pad)
	}
	return cv
}

// niceTicks returns a tick step of 1, 2 or 5 × 10^k and the number of steps
// (about five) that reach at least top.
func niceTicks(top float64) (float64, int) {
	if top <= 0 {
		return 1, 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return step, int(math.Ceil(top/step - 1e-9))
}

// formatTick writes an axis value with as many decimals as the step needs.
func formatTick(v, step float64) string {
	d := 0
	if step > 0 && step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// formatValue writes a value with three significant digits at most.
func formatValue(v float64) string {
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

// SVG renders the chart as a standalone SVG document.
func (c Chart) SVG() []byte {
	cv := c.layout()
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace">`+"\n",
		cv.W, cv.H, cv.W, cv.H)
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(cv.Title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="%s"/>`+"\n", cv.W, cv.H, hexColor(colorWhite))
	for _, s := range cv.Shapes {
		switch s.kind {
		case shapeRect:
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", s.X, s.Y, s.W, s.H, hexColor(s.Color))
		case shapeBar:
			fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s, %s: %s %s</title></rect>`+"\n",
				s.X, s.Y, s.W, s.H, hexColor(s.Color), html.EscapeString(strings.ReplaceAll(c.Groups[s.Group], "\n", " ")),
				html.EscapeString(c.Series[s.Series]), formatValue(c.Values[s.Group][s.Series]), html.EscapeString(c.Unit))
		case shapeLine:
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1" shape-rendering="crispEdges"/>`+"\n",
				s.X, s.Y, s.X2, s.Y2, hexColor(s.Color))
		case shapeText:
			anchor := [...]string{"start", "middle", "end"}[s.Anchor]
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="%d" text-anchor="%s" fill="%s">%s</text>`+"\n",
				s.X, s.Y, advance*s.Scale*10/6, anchor, hexColor(s.Color), html.EscapeString(s.Text))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }
