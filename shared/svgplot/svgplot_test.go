package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

func figure() *Figure {
	return &Figure{Title: "relative loss <by round>", Columns: 2, Panels: []Panel{
		{Title: "quadrants:1, f=0.5", XLabel: "round", YLabel: "relative loss", LogY: true, Series: []Series{
			{Name: "hyfdca", X: []float64{1, 2, 3, 4}, Y: []float64{1, 0.1, 0.01, 1e-3}},
			{Name: "fedavg", X: []float64{1, 2, 3, 4}, Y: []float64{1, 0.9, math.NaN(), 0.8}},
		}},
		{Title: "empty", Series: []Series{{Name: "hyfdca", X: []float64{1}, Y: []float64{-1}}}, LogY: true},
		{Title: "linear", XLabel: "seconds", Series: []Series{{Name: "fedavg", X: []float64{0, 0.5}, Y: []float64{3, 2}}}},
	}}
}

// The output is well-formed XML, escapes text, draws one polyline per
// series with points, and skips what a log axis cannot show.
func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	if err := figure().Write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	d := xml.NewDecoder(strings.NewReader(out))
	polylines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, out)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 3 {
		t.Errorf("%d polylines, want 3 (the empty panel has none)", polylines)
	}
	for _, want := range []string{"relative loss &lt;by round&gt;", "no data", "1e-3", ">fedavg<", ">hyfdca<"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The NaN point is skipped: the fedavg line in panel 1 has 3 points.
	if !strings.Contains(out, "<title>fedavg</title>") {
		t.Error("series not titled")
	}
	if os.Getenv("SVGPLOT_WRITE") != "" {
		os.WriteFile(os.Getenv("SVGPLOT_WRITE"), buf.Bytes(), 0o644)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{{0, 100}, {1, 2500}, {0.001, 0.003}, {-5, 5}} {
		ts := niceTicks(c.lo, c.hi)
		if len(ts) < 2 || len(ts) > 11 {
			t.Errorf("niceTicks(%v, %v) = %v", c.lo, c.hi, ts)
		}
		for _, v := range ts {
			if v < c.lo-1e-12 || v > c.hi+1e-9 {
				t.Errorf("tick %v outside [%v, %v]", v, c.lo, c.hi)
			}
		}
	}
}
