// Package svgplot draws line charts as standalone SVG files: a grid of
// panels, each with a few named series, a linear x axis and a linear or
// logarithmic y axis. It is what hyfed compare writes its plots with (no
// plotting dependency for a few polylines).
package svgplot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Series is one line.
type Series struct {
	Name string
	X, Y []float64 // points with a non-finite or (log scale) non-positive Y are skipped
}

// Panel is one chart.
type Panel struct {
	Title  string
	XLabel string
	YLabel string
	LogY   bool
	Series []Series
}

// Figure is a grid of panels.
type Figure struct {
	Title   string
	Columns int // panels per row (default 3)
	Panels  []Panel
}

const (
	panelW, panelH = 360, 260
	marginL        = 62
	marginR        = 12
	marginT        = 28
	marginB        = 40
	legendH        = 22
)

// Colors of the series, by index (the same name gets the same colour in
// every panel when the series come in the same order).
var Colors = []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"}

// Write writes the figure as SVG.
func (f *Figure) Write(w io.Writer) error {
	cols := f.Columns
	if cols <= 0 {
		cols = 3
	}
	if len(f.Panels) < cols {
		cols = max(1, len(f.Panels))
	}
	rows := (len(f.Panels) + cols - 1) / cols
	titleH := 0
	if f.Title != "" {
		titleH = 30
	}
	names := f.seriesNames()
	legendRows := (len(names) + 3) / 4
	W := cols * panelW
	H := titleH + rows*panelH + legendRows*legendH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	if f.Title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", 8, esc(f.Title))
	}
	for i, p := range f.Panels {
		x0 := (i % cols) * panelW
		y0 := titleH + (i/cols)*panelH
		p.draw(&b, x0, y0, names)
	}
	// One legend for the figure.
	ly := titleH + rows*panelH + 4
	for i, n := range names {
		x := 10 + (i%4)*(W/4)
		y := ly + (i/4)*legendH + 12
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`, x, y-4, x+22, y-4, color(i))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+28, y, esc(n))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// seriesNames lists the series names in first-seen order.
func (f *Figure) seriesNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range f.Panels {
		for _, s := range p.Series {
			if !seen[s.Name] {
				seen[s.Name] = true
				names = append(names, s.Name)
			}
		}
	}
	return names
}

func (p *Panel) draw(b *strings.Builder, x0, y0 int, names []string) {
	ix0, iy0 := x0+marginL, y0+marginT
	iw, ih := panelW-marginL-marginR, panelH-marginT-marginB
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", ix0, y0+16, esc(p.Title))
	xmin, xmax, ymin, ymax := p.bounds()
	if xmin > xmax { // no points
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#888">no data</text>`+"\n", ix0+10, iy0+ih/2)
		return
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	ty := func(v float64) float64 { return v }
	if p.LogY {
		ty = math.Log10
		ymin, ymax = math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	} else {
		pad := (ymax - ymin) * 0.05
		ymin, ymax = ymin-pad, ymax+pad
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	px := func(x float64) float64 { return float64(ix0) + (x-xmin)/(xmax-xmin)*float64(iw) }
	py := func(y float64) float64 { return float64(iy0+ih) - (ty(y)-ymin)/(ymax-ymin)*float64(ih) }
	// Axes and grid.
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", ix0, iy0, iw, ih)
	for _, t := range yTicks(ymin, ymax, p.LogY) {
		y := float64(iy0+ih) - (t.v-ymin)/(ymax-ymin)*float64(ih)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			ix0, y, ix0+iw, y, ix0-4, y+4, t.label)
	}
	for _, t := range xTicks(xmin, xmax) {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x, iy0, x, iy0+ih, x, iy0+ih+14, num(t))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", ix0+iw/2, iy0+ih+30, esc(p.XLabel))
	fmt.Fprintf(b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0+12, iy0+ih/2, esc(p.YLabel))
	for _, s := range p.Series {
		ci := 0
		for i, n := range names {
			if n == s.Name {
				ci = i
			}
		}
		var pts []string
		for i := range s.X {
			if i >= len(s.Y) || !p.ok(s.Y[i]) || math.IsNaN(s.X[i]) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
		}
		if len(pts) > 0 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"><title>%s</title></polyline>`+"\n",
				color(ci), strings.Join(pts, " "), esc(s.Name))
		}
	}
}

func (p *Panel) ok(y float64) bool {
	return !math.IsNaN(y) && !math.IsInf(y, 0) && (!p.LogY || y > 0)
}

func (p *Panel) bounds() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, s := range p.Series {
		for i := range s.X {
			if i >= len(s.Y) || !p.ok(s.Y[i]) || math.IsNaN(s.X[i]) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	return
}

type tick struct {
	v     float64 // in axis units (log10 for a log axis)
	label string
}

func yTicks(lo, hi float64, log bool) []tick {
	var out []tick
	if log {
		step := math.Max(1, math.Ceil((hi-lo)/6))
		for e := lo; e <= hi+1e-9; e += step {
			out = append(out, tick{e, fmt.Sprintf("1e%d", int(e))})
		}
		return out
	}
	for _, t := range niceTicks(lo, hi) {
		out = append(out, tick{t, num(t)})
	}
	return out
}

func xTicks(lo, hi float64) []float64 { return niceTicks(lo, hi) }

// niceTicks returns about five round values in [lo, hi].
func niceTicks(lo, hi float64) []float64 {
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi+step*1e-9; t += step {
		out = append(out, t)
	}
	return out
}

func num(v float64) string {
	if v != 0 && (math.Abs(v) >= 1e5 || math.Abs(v) < 1e-3) {
		return fmt.Sprintf("%.0e", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func color(i int) string { return Colors[i%len(Colors)] }

func esc(s string) string { return html.EscapeString(s) }
