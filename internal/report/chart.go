package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// axisKind is how a chart's x values map to positions.
type axisKind int

const (
	linearAxis axisKind = iota
	// percentileAxis: x is a percentile (0..100) drawn at log10 of
	// 1/(1-p), HdrHistogram's spectrum axis: 0%, 90%, 99%, 99.9% … equally
	// spaced.
	percentileAxis
	// categoryAxis: x is an index into the chart's categories, equally
	// spaced (a sweep axis whose values are words).
	categoryAxis
)

// series is one line of a chart.
type series struct {
	Name string
	X, Y []float64
	// Low and High, when set, are an interval around each Y (drawn as
	// error bars).
	Low, High []float64
	Dashed    bool
	// Markers draws each point (a sweep's few points); a time series is a
	// line only.
	Markers bool
	// Colour, when set, replaces the palette's (a reference drawn in grey).
	Colour string
}

// band shades a stretch of the x axis (a ramp).
type band struct {
	From, To float64
	Label    string
}

// chart is what to draw; view turns it into SVG geometry.
type chart struct {
	ID, Title, XLabel, YLabel string
	XKind                     axisKind
	Categories                []string
	Series                    []series
	Bands                     []band
	// Note is shown under the chart (how it was drawn, what is missing).
	Note string
	// Data are the plotted numbers, complete, for people and tests.
	Data table
}

// table is rows of text with a header; Class names it for the page's
// styles and tests ("data" for a chart's numbers).
type table struct {
	Class  string
	Header []string
	Rows   [][]string
}

// palette is one colour per series, distinguishable in print as on screen.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Geometry of every chart, in SVG user units (pixels at 100%).
const (
	chartWidth   = 860
	chartHeight  = 300
	marginLeft   = 64
	marginRight  = 16
	marginTop    = 16
	marginBottom = 44
	plotWidth    = chartWidth - marginLeft - marginRight
	plotHeight   = chartHeight - marginTop - marginBottom
)

type chartView struct {
	ID, Title, Note string
	Width, Height   int
	Plot            rect
	XLabel, YLabel  string
	Bands           []rect
	XTicks, YTicks  []tick
	Paths           []pathView
	Markers         []marker
	Bars            []bar
	Legend          []legendItem
	Data            table
}

type rect struct {
	X, Y, W, H float64
	Label      string
}

type tick struct {
	Pos   float64
	Label string
}

type pathView struct {
	D, Colour, Dash, Name string
}

type marker struct {
	CX, CY        float64
	Colour, Title string
}

type bar struct {
	X, Y1, Y2 float64
	// Cut: the interval goes on above the plot.
	Cut    bool
	Colour string
}

type legendItem struct {
	Colour, Dash, Name string
}

// xPosition maps an x value to the axis's own scale before fitting.
func (c *chart) xPosition(x float64) float64 {
	if c.XKind == percentileAxis {
		return percentilePosition(x)
	}
	return x
}

// percentilePosition is log10(1/(1-p)); 100% itself, infinitely far, is
// drawn where the caller put it (spectrum series carry it one step
// beyond their last finite point).
func percentilePosition(p float64) float64 {
	if p >= 100 {
		return math.Inf(1)
	}
	return -math.Log10(1 - p/100)
}

// view computes the chart's geometry: scales from the data, nice ticks,
// one path per series, downsampled to the plot's pixel columns where a
// series has more points than columns (the minimum and maximum of each
// column are kept, so spikes stay visible).
func (c *chart) view() chartView {
	v := chartView{ID: c.ID, Title: c.Title, Note: c.Note, Width: chartWidth, Height: chartHeight,
		Plot:   rect{X: marginLeft, Y: marginTop, W: plotWidth, H: plotHeight},
		XLabel: c.XLabel, YLabel: c.YLabel, Data: c.Data}
	xmin, xmax, ymax, highest := math.Inf(1), math.Inf(-1), 0.0, 0.0
	for _, s := range c.Series {
		for i, x := range s.X {
			p := c.xPosition(x)
			if math.IsNaN(s.Y[i]) {
				continue
			}
			// A spectrum's maximum, at 100%, is drawn at the right edge:
			// the y scale holds it, the x scale cannot.
			ymax = math.Max(ymax, s.Y[i])
			if math.IsInf(p, 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, p), math.Max(xmax, p)
			if s.High != nil && !math.IsNaN(s.High[i]) {
				highest = math.Max(highest, s.High[i])
			}
		}
	}
	// Intervals are drawn whole up to twice the highest point; one of two
	// repetitions can be ten times the spread, and is cut there (an
	// arrowhead says so) rather than squash the lines.
	ymax = math.Max(ymax, math.Min(highest, 2*ymax))
	for _, b := range c.Bands {
		xmin, xmax = math.Min(xmin, b.From), math.Max(xmax, b.To)
	}
	switch {
	case c.XKind == categoryAxis:
		xmin, xmax = -0.5, float64(len(c.Categories))-0.5
	case math.IsInf(xmin, 0):
		xmin, xmax = 0, 1
	case c.XKind == percentileAxis:
		xmin, xmax = 0, math.Max(math.Ceil(xmax), 1)
	case xmax == xmin:
		xmin, xmax = xmin-1, xmax+1
	case len(c.Categories) > 0:
		// A sweep's points: keep the first and last off the frame.
		pad := (xmax - xmin) / 20
		xmin, xmax = xmin-pad, xmax+pad
	}
	ystep := niceStep(ymax, 5)
	ytop := math.Max(math.Ceil(ymax/ystep)*ystep, ystep)
	sx := func(p float64) float64 {
		if math.IsInf(p, 1) {
			p = xmax
		}
		return marginLeft + (p-xmin)/(xmax-xmin)*plotWidth
	}
	sy := func(y float64) float64 { return marginTop + plotHeight - y/ytop*plotHeight }

	for _, b := range c.Bands {
		x1, x2 := sx(b.From), sx(b.To)
		v.Bands = append(v.Bands, rect{X: x1, Y: marginTop, W: x2 - x1, H: plotHeight, Label: b.Label})
	}
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		v.YTicks = append(v.YTicks, tick{Pos: sy(y), Label: tickLabel(y, ystep)})
	}
	switch {
	case c.XKind == categoryAxis:
		for i, name := range c.Categories {
			v.XTicks = append(v.XTicks, tick{Pos: sx(float64(i)), Label: name})
		}
	case c.XKind == percentileAxis:
		for d := 0.0; d <= xmax; d++ {
			v.XTicks = append(v.XTicks, tick{Pos: sx(d), Label: percentileLabel(d)})
		}
	case len(c.Categories) > 0 && len(c.Categories) <= 12:
		// A numeric sweep axis: ticks at the values it took.
		for _, name := range c.Categories {
			if x, ok := numeric(name); ok {
				v.XTicks = append(v.XTicks, tick{Pos: sx(x), Label: name})
			}
		}
	default:
		step := niceStep(xmax-xmin, 8)
		for x := math.Ceil(xmin/step) * step; x <= xmax+step/1e6; x += step {
			v.XTicks = append(v.XTicks, tick{Pos: sx(x), Label: tickLabel(x, step)})
		}
	}
	downsampled := false
	for i, s := range c.Series {
		colour := palette[i%len(palette)]
		if s.Colour != "" {
			colour = s.Colour
		}
		dash := ""
		if s.Dashed {
			dash = "6 4"
		}
		pts := make([][2]float64, 0, len(s.X))
		for j, x := range s.X {
			if math.IsNaN(s.Y[j]) {
				pts = append(pts, [2]float64{math.NaN(), math.NaN()})
				continue
			}
			pts = append(pts, [2]float64{sx(c.xPosition(x)), sy(s.Y[j])})
		}
		if len(pts) > 2*plotWidth {
			pts = downsample(pts)
			downsampled = true
		}
		v.Paths = append(v.Paths, pathView{D: pathData(pts), Colour: colour, Dash: dash, Name: s.Name})
		if s.Markers {
			for j, x := range s.X {
				if math.IsNaN(s.Y[j]) {
					continue
				}
				px := sx(c.xPosition(x))
				v.Markers = append(v.Markers, marker{CX: px, CY: sy(s.Y[j]), Colour: colour, Title: fmt.Sprintf("%s: %s", s.Name, strconv.FormatFloat(s.Y[j], 'g', 6, 64))})
				if s.Low != nil && !math.IsNaN(s.Low[j]) && !math.IsNaN(s.High[j]) {
					// Series at one x would hide each other's bars: spread them.
					offset := (float64(i) - float64(len(c.Series)-1)/2) * 4
					v.Bars = append(v.Bars, bar{X: px + offset, Y1: sy(math.Max(s.Low[j], 0)), Y2: sy(math.Min(s.High[j], ytop)), Cut: s.High[j] > ytop, Colour: colour})
				}
			}
		}
		v.Legend = append(v.Legend, legendItem{Colour: colour, Dash: dash, Name: s.Name})
	}
	if downsampled {
		v.Note = strings.TrimSpace(v.Note + fmt.Sprintf(" Drawn at one column per pixel (%d): each column's minimum and maximum; the numbers below are complete.", plotWidth))
	}
	return v
}

// downsample keeps, per pixel column, the first and last point and the
// lowest and highest, in their order: the line looks as the full series
// would at this width, with a few hundred vertices instead of thousands.
func downsample(pts [][2]float64) [][2]float64 {
	var out [][2]float64
	flush := func(col [][2]float64) {
		if len(col) == 0 {
			return
		}
		lo, hi := 0, 0
		for i, p := range col {
			if p[1] < col[lo][1] {
				lo = i
			}
			if p[1] > col[hi][1] {
				hi = i
			}
		}
		keep := []int{0, lo, hi, len(col) - 1}
		last := -1
		for _, k := range sortedUnique(keep) {
			if k != last {
				out = append(out, col[k])
				last = k
			}
		}
	}
	var col [][2]float64
	column := math.NaN()
	for _, p := range pts {
		if math.IsNaN(p[0]) {
			flush(col)
			col = nil
			out = append(out, p)
			continue
		}
		if c := math.Floor(p[0]); c != column {
			flush(col)
			col, column = nil, c
		}
		col = append(col, p)
	}
	flush(col)
	return out
}

func sortedUnique(xs []int) []int {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
	return xs
}

// pathData is an SVG path through the points; a NaN breaks the line.
func pathData(pts [][2]float64) string {
	var b strings.Builder
	move := true
	for _, p := range pts {
		if math.IsNaN(p[0]) {
			move = true
			continue
		}
		if move {
			b.WriteByte('M')
			move = false
		} else {
			b.WriteByte('L')
		}
		b.WriteString(strconv.FormatFloat(p[0], 'f', 1, 64))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(p[1], 'f', 1, 64))
	}
	return b.String()
}

// niceStep is a step of 1, 2 or 5 × 10^k that cuts span into about n
// intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func tickLabel(x, step float64) string {
	digits := 0
	if step < 1 {
		digits = int(math.Ceil(-math.Log10(step)))
	}
	return strconv.FormatFloat(x, 'f', digits, 64)
}

// percentileLabel names the decade d of the spectrum axis: 0%, 90%, 99%, …
func percentileLabel(d float64) string {
	if d == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*(1-math.Pow(10, -d)), 'f', max(int(d)-2, 0), 64) + "%"
}
