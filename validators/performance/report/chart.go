package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

// Chart geometry, in SVG user units. The plot is wide enough to label every
// power of two from 1K to 16G (25 ticks) without rotating the labels.
const (
	chartWidth   = 960
	plotLeft     = 80
	plotRight    = chartWidth - 40
	plotTop      = 96
	plotBottom   = 476
	problemTop   = 548 // first line of the problem list under the x-axis label
	lineHeight   = 17
	minTickGap   = 30 // px between x labels; "512K" at 11px is about 26px wide
	wrapColumns  = 118
	colorPass    = "#1a7f37"
	colorFail    = "#cf222e"
	colorData    = "#0969da"
	colorFloor   = "#57606a"
	colorGrid    = "#d8dee4"
	colorMissing = "#f3f4f6"
)

// Chart draws out-of-place bus bandwidth against message size (log2 x axis
// labelled 1K..16G), the declared floor and the 0.9× pass threshold as
// labelled horizontal lines, the measured point, and a title with the
// verdict. A failed verdict lists its problems under the plot, so the image
// explains itself when it travels without the report. The x axis spans the
// run's requested sizes (minBytes..maxBytes), so a truncated run shows the
// sizes it never reached as a shaded gap.
func Chart(l *busbw.Log, v busbw.Verdict) ([]byte, error) {
	if l == nil {
		l = &busbw.Log{}
	}
	fab, err := v.JudgedFabric()
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	for _, r := range l.Rows {
		if r.Size < 0 || !finite(r.OOP.BusBW) || r.OOP.BusBW < 0 {
			return nil, fmt.Errorf("chart: row of size %d has busbw %v; want a byte count and a finite, non-negative bandwidth", r.Size, r.OOP.BusBW)
		}
	}
	c := newCanvas(l, v)
	problems := wrapAll(v.Problems, wrapColumns)
	height := problemTop + 12
	if len(problems) > 0 {
		height = problemTop + lineHeight*(len(problems)+1) + 8
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	verdict, color := "FAIL", colorFail
	if v.Pass {
		verdict, color = "PASS", colorPass
	}
	bench := chartedCollective(l)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc("NCCL "+bench+" bus bandwidth: "+verdict))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, height)

	// Title and the one-line evidence under it.
	fmt.Fprintf(&b, `<text x="%d" y="34" font-size="20" font-weight="bold" fill="#1f2328">NCCL %s bus bandwidth: <tspan fill="%s">%s</tspan></text>`+"\n", plotLeft, esc(bench), color, verdict)
	fmt.Fprintf(&b, `<text x="%d" y="58" font-size="13" fill="#1f2328">%s</text>`+"\n", plotLeft, esc(subtitle(l, v)))
	fmt.Fprintf(&b, `<text x="%d" y="78" font-size="12" fill="%s">%s</text>`+"\n", plotLeft, colorFloor, esc(runFacts(l, fab)))

	c.gapForMissingSizes(&b)
	c.yGrid(&b)
	c.xAxis(&b)
	c.floorLines(&b)
	c.series(&b, color)

	// Axis titles.
	fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle" font-size="13" fill="#1f2328">message size (bytes, log2 scale)</text>`+"\n", num((plotLeft+plotRight)/2), plotBottom+44)
	fmt.Fprintf(&b, `<text transform="translate(22 %s) rotate(-90)" text-anchor="middle" font-size="13" fill="#1f2328">bus bandwidth, out-of-place (GB/s)</text>`+"\n", num((plotTop+plotBottom)/2))

	if len(problems) > 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" font-weight="bold" fill="%s">Problems</text>`+"\n", plotLeft, problemTop, colorFail)
		for i, line := range problems {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#1f2328">%s</text>`+"\n", plotLeft, problemTop+lineHeight*(i+1), esc(line))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// canvas maps data to the plot area.
type canvas struct {
	l *busbw.Log
	v busbw.Verdict
	// rows are the plotted rows: the last cycle's, without the size-0 rows
	// -b 0 and -b 1 print, which a log axis cannot place.
	rows                 []busbw.Row
	xMin, xMax           int64   // bytes, both powers of the step from xMin
	yMax, yStep          float64 // GB/s
	drawFloor, drawThres bool
}

func newCanvas(l *busbw.Log, v busbw.Verdict) *canvas {
	c := &canvas{l: l, v: v}
	for _, r := range l.Rows[min(max(l.CycleStart, 0), len(l.Rows)):] {
		if r.Size > 0 {
			c.rows = append(c.rows, r)
		}
	}
	c.xMin = l.MinBytes
	if c.xMin <= 0 && len(c.rows) > 0 {
		c.xMin = c.rows[0].Size
	}
	if c.xMin <= 0 {
		c.xMin = 1024
	}
	c.xMax = l.MaxBytes
	if n := len(c.rows); n > 0 && c.rows[n-1].Size > c.xMax {
		c.xMax = c.rows[n-1].Size
	}
	if c.xMax <= c.xMin {
		c.xMax = c.xMin * 2
	}
	c.drawFloor = v.Floor.GBps > 0 && finite(v.Floor.GBps)
	c.drawThres = c.drawFloor && v.Threshold > 0 && finite(v.Threshold)
	top := 0.0
	for _, r := range c.rows {
		top = math.Max(top, r.OOP.BusBW)
	}
	if c.drawFloor {
		top = math.Max(top, v.Floor.GBps)
	}
	c.yStep = niceStep(top * 1.1 / 6)
	c.yMax = math.Ceil(top*1.1/c.yStep) * c.yStep
	if c.yMax <= 0 {
		c.yMax = c.yStep * 5
	}
	return c
}

func (c *canvas) x(size int64) float64 {
	lo, hi := math.Log2(float64(c.xMin)), math.Log2(float64(c.xMax))
	return plotLeft + (math.Log2(float64(size))-lo)/(hi-lo)*(plotRight-plotLeft)
}

func (c *canvas) y(gbps float64) float64 {
	return plotBottom - gbps/c.yMax*(plotBottom-plotTop)
}

func (c *canvas) yGrid(b *bytes.Buffer) {
	for i := 0; ; i++ {
		val := float64(i) * c.yStep
		if val > c.yMax+c.yStep/1e6 {
			break
		}
		y := num(c.y(val))
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-width="1"/>`+"\n", plotLeft, y, plotRight, y, colorGrid)
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle" fill="#1f2328">%s</text>`+"\n", plotLeft-8, y, busbw.FormatGBps(val))
	}
}

// xAxis ticks every power of two from xMin to xMax and labels as many as fit,
// counting from the largest size so the top of the sweep is always labelled.
func (c *canvas) xAxis(b *bytes.Buffer) {
	var ticks []int64
	for s := c.xMin; s > 0 && s <= c.xMax; s *= 2 {
		ticks = append(ticks, s)
		if s > math.MaxInt64/2 {
			break
		}
	}
	every := 1
	if n := len(ticks); n > 1 {
		gap := float64(plotRight-plotLeft) / float64(n-1)
		every = int(math.Ceil(minTickGap / gap))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#1f2328" stroke-width="1"/>`+"\n", plotLeft, plotBottom, plotRight, plotBottom)
	for i, s := range ticks {
		x := num(c.x(s))
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#1f2328" stroke-width="1"/>`+"\n", x, plotBottom, x, plotBottom+5)
		if (len(ticks)-1-i)%every == 0 {
			fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="middle" font-size="11" fill="#1f2328">%s</text>`+"\n", x, plotBottom+19, busbw.FormatSize(s))
		}
	}
}

// floorLines draws the declared floor and the pass threshold. Their labels sit
// at the left end, where the curve is near zero, the floor's above its line
// and the threshold's below, so neither collides with the data or each other.
func (c *canvas) floorLines(b *bytes.Buffer) {
	if c.drawFloor {
		y := c.y(c.v.Floor.GBps)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="8 5"/>`+"\n", plotLeft, num(y), plotRight, num(y), colorFloor)
		fmt.Fprintf(b, `<text x="%d" y="%s" fill="%s">%s</text>`+"\n", plotLeft+8, num(y-6), colorFloor, esc(fmt.Sprintf("declared floor %s GB/s", c.v.Floor)))
	}
	if c.drawThres {
		y := c.y(c.v.Threshold)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="3 3"/>`+"\n", plotLeft, num(y), plotRight, num(y), colorFail)
		fmt.Fprintf(b, `<text x="%d" y="%s" fill="%s">%s</text>`+"\n", plotLeft+8, num(y+15), colorFail, esc(fmt.Sprintf("pass threshold %s GB/s (%g × floor)", busbw.FormatGBps(c.v.Threshold), busbw.PassFraction)))
	}
}

// gapForMissingSizes shades the sizes a truncated run was asked for but never
// printed.
func (c *canvas) gapForMissingSizes(b *bytes.Buffer) {
	n := len(c.rows)
	var from float64
	switch {
	case n == 0:
		from = plotLeft
	case c.rows[n-1].Size < c.xMax && c.incomplete():
		from = c.x(c.rows[n-1].Size)
	default:
		return
	}
	fmt.Fprintf(b, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s"/>`+"\n", num(from), plotTop, num(plotRight-from), plotBottom-plotTop, colorMissing)
	label := "not measured"
	if n == 0 {
		label = "no measurements: the results table is empty"
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" font-size="13" fill="%s">%s</text>`+"\n", num((from+plotRight)/2), num(plotTop+(plotBottom-plotTop)*0.75), colorFloor, esc(label))
}

// incomplete follows the verdict, so the chart never disagrees with it.
func (c *canvas) incomplete() bool {
	for _, ch := range c.v.Checks {
		if ch.Name == busbw.CheckComplete {
			return ch.Status == busbw.Failed
		}
	}
	return !c.l.Complete
}

// series draws the out-of-place busbw curve and marks the measured point.
func (c *canvas) series(b *bytes.Buffer, verdictColor string) {
	if len(c.rows) == 0 {
		return
	}
	pts := make([]string, len(c.rows))
	for i, r := range c.rows {
		pts[i] = num(c.x(r.Size)) + "," + num(c.y(r.OOP.BusBW))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"/>`+"\n", strings.Join(pts, " "), colorData)
	for _, r := range c.rows {
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s</title></circle>`+"\n", num(c.x(r.Size)), num(c.y(r.OOP.BusBW)), colorData,
			esc(fmt.Sprintf("%s: %s GB/s", busbw.FormatSize(r.Size), busbw.FormatGBps(r.OOP.BusBW))))
	}
	last := c.rows[len(c.rows)-1]
	x, y := c.x(last.Size), c.y(last.OOP.BusBW)
	fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="6" fill="none" stroke="%s" stroke-width="2.5"/>`+"\n", num(x), num(y), verdictColor)
	// Above the point unless that would leave the plot.
	ly := y - 12
	if ly < plotTop+12 {
		ly = y + 22
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" font-weight="bold" fill="%s">%s</text>`+"\n", num(x-8), num(ly), verdictColor,
		esc(fmt.Sprintf("%s GB/s at %s", busbw.FormatGBps(last.OOP.BusBW), busbw.FormatSize(last.Size))))
}

func subtitle(l *busbw.Log, v busbw.Verdict) string {
	if len(l.Rows) == 0 {
		return fmt.Sprintf("nothing measured; pass threshold %s GB/s (%g × declared floor %s GB/s)", busbw.FormatGBps(v.Threshold), busbw.PassFraction, v.Floor)
	}
	return fmt.Sprintf("%s GB/s out-of-place at %s; pass threshold %s GB/s (%g × declared floor %s GB/s)",
		busbw.FormatGBps(v.Measured), busbw.FormatSize(v.Size), busbw.FormatGBps(v.Threshold), busbw.PassFraction, v.Floor)
}

// runFacts is the line of what the log showed: nodes, network, the
// fabric's plugin version where the plugin logs one, NCCL.
func runFacts(l *busbw.Log, fab busbw.Fabric) string {
	nodes := "nodes not in log"
	switch {
	case l.Nodes > 0 && l.Ranks > 0:
		nodes = fmt.Sprintf("%d ranks on %d node(s)", l.Ranks, l.Nodes)
	case l.Nodes > 0:
		nodes = fmt.Sprintf("%d node(s)", l.Nodes)
	}
	parts := []string{nodes, "network " + orUnknown(strings.Join(l.Networks, ", "))}
	if fab.PluginVersionLine {
		parts = append(parts, fab.Network+" plugin "+orUnknown(strings.Join(l.PluginVersions, ", ")))
	}
	parts = append(parts, "NCCL "+orUnknown(l.NCCLVersion))
	return strings.Join(parts, " · ")
}

func orUnknown(s string) string {
	if s == "" {
		return "not in log"
	}
	return s
}

// niceStep rounds raw up to 1, 2, 2.5 or 5 times a power of ten, so grid
// labels are round numbers.
func niceStep(raw float64) float64 {
	if raw <= 0 || !finite(raw) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// wrapAll wraps each paragraph at width columns on spaces, marking the first
// line of each with a bullet and indenting the rest.
func wrapAll(paragraphs []string, width int) []string {
	var out []string
	for _, p := range paragraphs {
		line, empty := "• ", true
		for _, w := range strings.Fields(p) {
			if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
				out = append(out, line)
				line, empty = "  ", true
			}
			if !empty {
				line += " "
			}
			line += w
			empty = false
		}
		out = append(out, line)
	}
	return out
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // strings.Builder does not fail
	return b.String()
}

// chartedCollective names the benchmark in the chart's title: all_gather_perf
// for an all_gather log (a gIB run), else all_reduce_perf, as every chart
// was titled before other collectives were judged.
func chartedCollective(l *busbw.Log) string {
	if l != nil && l.Collective == busbw.AllGather {
		return busbw.AllGather
	}
	return busbw.AllReduce
}
