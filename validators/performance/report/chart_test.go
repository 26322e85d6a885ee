package report

import (
	"bytes"
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

// node is a generic XML element, enough to walk an SVG.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) num(t *testing.T, name string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return f
}

// text is the element's character data including its tspans.
func (n node) text() string {
	s := n.Text
	for _, c := range n.Children {
		if c.XMLName.Local == "tspan" {
			s += c.text()
		}
	}
	return s
}

func (n node) all(local string) []node {
	var out []node
	for _, c := range n.Children {
		if c.XMLName.Local == local {
			out = append(out, c)
		}
		out = append(out, c.all(local)...)
	}
	return out
}

func (n node) textContaining(s string) []node {
	var out []node
	for _, t := range n.all("text") {
		if strings.Contains(t.text(), s) {
			out = append(out, t)
		}
	}
	return out
}

// parseSVG decodes the chart strictly (every token, well-formedness
// included) and returns its root.
func parseSVG(t *testing.T, data []byte) node {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
	var root node
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("chart: %v", err)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element %v, want svg in the SVG namespace", root.XMLName)
	}
	return root
}

func chart(t *testing.T, name string) (node, []byte, busbw.Verdict) {
	t.Helper()
	l, v := judge(t, name)
	data, err := Chart(l, v)
	if err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, data), data, v
}

// dashed finds the horizontal line drawn with the given dash pattern.
func dashed(t *testing.T, root node, pattern string) node {
	t.Helper()
	for _, l := range root.all("line") {
		if l.attr("stroke-dasharray") == pattern {
			return l
		}
	}
	t.Fatalf("no line with stroke-dasharray %q", pattern)
	return node{}
}

// gridY is the y of the grid label with the given text: the chart's own
// y mapping, used to check where the lines and points were put.
func gridY(t *testing.T, root node, label string) float64 {
	t.Helper()
	for _, tx := range root.all("text") {
		if tx.attr("dominant-baseline") == "middle" && tx.text() == label {
			return tx.num(t, "y")
		}
	}
	t.Fatalf("no y grid label %q", label)
	return 0
}

func points(t *testing.T, root node) [][2]float64 {
	t.Helper()
	lines := root.all("polyline")
	if len(lines) != 1 {
		t.Fatalf("%d polylines, want 1", len(lines))
	}
	var out [][2]float64
	for _, p := range strings.Fields(lines[0].attr("points")) {
		x, y, _ := strings.Cut(p, ",")
		fx, e1 := strconv.ParseFloat(x, 64)
		fy, e2 := strconv.ParseFloat(y, 64)
		if e1 != nil || e2 != nil {
			t.Fatalf("point %q", p)
		}
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

func (n node) textEqual(s string) []node {
	var out []node
	for _, t := range n.all("text") {
		if t.text() == s {
			out = append(out, t)
		}
	}
	return out
}

func TestChartEverySampleIsValidSVG(t *testing.T) {
	for _, name := range samples {
		t.Run(name, func(t *testing.T) {
			root, _, v := chart(t, name)
			want := "FAIL"
			if v.Pass {
				want = "PASS"
			}
			titles := root.textContaining("NCCL all_reduce_perf bus bandwidth: ")
			if len(titles) != 1 || !strings.HasSuffix(titles[0].text(), want) {
				t.Errorf("title %v, want it to end in %s", titles, want)
			}
			for _, p := range v.Problems {
				// Problems are wrapped; their first words start a bullet line.
				first := strings.Join(strings.Fields(p)[:3], " ")
				if len(root.textContaining("• "+first)) != 1 {
					t.Errorf("problem %q is not listed", first)
				}
			}
			if h := root.num(t, "height"); h < plotBottom {
				t.Errorf("height %v", h)
			}
		})
	}
}

func TestChartHealthy(t *testing.T) {
	root, data, _ := chart(t, "healthy")
	// Every power of two from 1K to 16G is labelled, in order.
	var labels []string
	for _, tx := range root.all("text") {
		if tx.attr("font-size") == "11" {
			labels = append(labels, tx.text())
		}
	}
	var want []string
	for s := int64(1024); s <= 16<<30; s *= 2 {
		want = append(want, busbw.FormatSize(s))
	}
	if strings.Join(labels, " ") != strings.Join(want, " ") {
		t.Errorf("x labels %v\nwant     %v", labels, want)
	}
	// The floor line sits at the 300 grid line, the threshold 30 GB/s below.
	floor := dashed(t, root, "8 5")
	thres := dashed(t, root, "3 3")
	y300, y200 := gridY(t, root, "300"), gridY(t, root, "200")
	perGB := (y200 - y300) / 100
	if fy := floor.num(t, "y1"); fy != floor.num(t, "y2") || math.Abs(fy-y300) > 0.1 {
		t.Errorf("floor line at y %v, the 300 grid line at %v", fy, y300)
	}
	if ty := thres.num(t, "y1"); ty != thres.num(t, "y2") || math.Abs(ty-(y300+30*perGB)) > 0.1 {
		t.Errorf("threshold line at y %v, want %v", ty, y300+30*perGB)
	}
	if len(root.textEqual("declared floor >= 300 GB/s")) != 1 || len(root.textEqual("pass threshold 270 GB/s (0.9 × floor)")) != 1 {
		t.Error("the floor and threshold lines are not labelled")
	}
	// One point per size, left to right on a log2 axis (equal steps for
	// doubling sizes), the last at 343.3 GB/s above the floor.
	pts := points(t, root)
	if len(pts) != 25 {
		t.Fatalf("%d points, want 25", len(pts))
	}
	step := pts[1][0] - pts[0][0]
	for i := 1; i < len(pts); i++ {
		if d := pts[i][0] - pts[i-1][0]; math.Abs(d-step) > 0.11 {
			t.Fatalf("x step %d is %v, want %v (log2 axis)", i, d, step)
		}
	}
	if last := pts[24][1]; math.Abs(last-(y300-43.3*perGB)) > 0.1 {
		t.Errorf("16G point at y %v, want %v", last, y300-43.3*perGB)
	}
	if len(root.textContaining("343.3 GB/s at 16G")) != 1 {
		t.Error("the measured point is not labelled")
	}
	if len(root.textContaining("not measured")) != 0 || len(root.textContaining("Problems")) != 0 {
		t.Error("a complete, passing run shows a gap or problems")
	}
	golden(t, "healthy.svg", data)
}

func TestChartTCPFallbackIsBelowThreshold(t *testing.T) {
	root, _, _ := chart(t, "tcp-fallback")
	pts := points(t, root)
	thres := dashed(t, root, "3 3").num(t, "y1")
	if last := pts[len(pts)-1][1]; last <= thres {
		t.Errorf("20 GB/s point at y %v is not below the threshold line at %v", last, thres)
	}
	if len(root.textContaining("network Socket")) != 1 {
		t.Error("the chart does not say NCCL used Socket")
	}
}

// A truncated run keeps the full 1K..16G axis and shades the sizes it never
// reached, starting at its last measured size.
func TestChartTruncatedShowsGap(t *testing.T) {
	root, _, _ := chart(t, "truncated")
	pts := points(t, root)
	if len(pts) != 21 {
		t.Fatalf("%d points", len(pts))
	}
	if len(root.textContaining("16G")) == 0 {
		t.Error("the x axis no longer reaches 16G")
	}
	if len(root.textContaining("not measured")) != 1 {
		t.Fatal("no 'not measured' gap")
	}
	var gap node
	for _, r := range root.all("rect") {
		if r.attr("fill") == colorMissing {
			gap = r
		}
	}
	if x := gap.num(t, "x"); math.Abs(x-pts[20][0]) > 0.1 || math.Abs(x+gap.num(t, "width")-plotRight) > 0.1 {
		t.Errorf("gap from %v width %v; last point at %v", x, gap.num(t, "width"), pts[20][0])
	}
}

func TestChartEmptyTable(t *testing.T) {
	root, _, _ := chart(t, "empty-table")
	if len(root.all("polyline")) != 0 {
		t.Error("an empty table drew a curve")
	}
	if len(root.textContaining("no measurements: the results table is empty")) != 1 {
		t.Error("an empty table is not said to be empty")
	}
	if len(root.textEqual("declared floor >= 300 GB/s")) != 1 {
		t.Error("the floor is missing from an empty chart")
	}
}

// Text from the log (problem messages quote it) is escaped, so hostile
// characters cannot break the document.
func TestChartEscapesText(t *testing.T) {
	l, v := judge(t, "healthy")
	v.Pass = false
	v.Problems = []string{`a <script>alert("x")</script> & ]]> problem`}
	l.Networks = []string{"<Socket&>"}
	data, err := Chart(l, v)
	if err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, data)
	if len(root.all("script")) != 0 || len(root.textContaining(`<script>alert("x")</script> & ]]>`)) != 1 || len(root.textContaining("network <Socket&>")) != 1 {
		t.Fatalf("text not carried through escaped:\n%s", data)
	}
}

func TestChartDeterministic(t *testing.T) {
	l, v := judge(t, "truncated")
	a, err := Chart(l, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Chart(l, v)
	if err != nil {
		t.Fatal(err)
	}
	// Two empty outputs would be equal too.
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("two renderings differ")
	}
}

func TestChartRejectsNonFiniteRows(t *testing.T) {
	l, v := judge(t, "healthy")
	l.Rows[3].OOP.BusBW = math.Inf(1)
	if _, err := Chart(l, v); err == nil {
		t.Fatal("an infinite busbw was charted")
	}
}

// Without a valid floor the chart still renders, just without the lines.
func TestChartWithoutFloor(t *testing.T) {
	l, _ := judge(t, "healthy")
	v := busbw.Evaluate(l, busbw.Floor{}, "v1.0.15")
	data, err := Chart(l, v)
	if err != nil {
		t.Fatal(err)
	}
	root := parseSVG(t, data)
	for _, ln := range root.all("line") {
		if ln.attr("stroke-dasharray") != "" {
			t.Fatal("a floor line was drawn for an invalid floor")
		}
	}
}

func TestChartNilLog(t *testing.T) {
	data, err := Chart(nil, busbw.Verdict{})
	if err != nil {
		t.Fatal(err)
	}
	parseSVG(t, data)
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{62.9: 100, 55: 100, 45: 50, 21: 25, 3.7: 5, 0.37: 0.5, 1: 1, 0: 1, -3: 1} {
		if got := niceStep(raw); math.Abs(got-want) > 1e-12 {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}

func TestWrapAll(t *testing.T) {
	got := wrapAll([]string{"aaa bbb ccc ddd", "one"}, 9)
	want := []string{"• aaa bbb", "  ccc ddd", "• one"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrapAll = %q, want %q", got, want)
	}
	// A word longer than the width stays whole on its own line.
	if got := wrapAll([]string{"x " + strings.Repeat("y", 20)}, 9); len(got) != 2 || got[1] != "  "+strings.Repeat("y", 20) {
		t.Errorf("long word: %q", got)
	}
}
