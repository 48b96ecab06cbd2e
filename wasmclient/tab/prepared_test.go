package tab

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hyfed/hyfed/server"
	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/secret"
	"github.com/hyfed/hyfed/shared/session"
	"github.com/hyfed/hyfed/shared/table"
)

const preparedSchema = `{"id": "id", "label": {"column": "y", "positive": ["yes"], "negative": ["no"]},
 "features": [{"name": "px", "scale": 10}, {"name": "age"}, {"name": "smoker", "categories": ["never", "current"]}, {"name": "bmi"}],
 "missing": "mean"}`

// Two parties' own files: the same eight ids, other columns; a pixel
// beyond its declared scale, a missing cell.
var preparedFiles = []string{
	"id,y,px,age\np1,yes,0,30\np2,no,5,41\np3,yes,10,35\np4,no,12,62\np5,yes,3,28\np6,no,7,55\np7,yes,1,47\np8,no,9,33\n",
	"id,y,smoker,bmi\np1,yes,never,21.5\np2,no,current,30\np3,yes,never,\np4,no,current,27.25\np5,yes,never,19\np6,no,never,33\np7,yes,current,24\np8,no,never,26\n",
}

// TestPreparedRows: after the preparation each tab reports its first rows
// as the federation trains them (the privacy view compares the curious
// server's reconstruction with these): a declared scale divided and
// clipped, a numeric column standardized with the federation's statistics,
// a category 0/1, a missing cell 0, the intercept at exactly one holder of
// every sample. Before it, the summary shows the declared column already
// on its scale.
func TestPreparedRows(t *testing.T) {
	sch, err := schema.Parse(strings.NewReader(preparedSchema))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); srv.Close() })
	sec, _ := secret.New()
	resp, err := srv.Create(server.CreateRequest{Fingerprint: sec.Fingerprint(), RoundTimeout: server.Duration(time.Minute),
		Config: protocol.Config{Lambda: 1e-2, Rounds: 2, IIC: 0.2, Clients: 2, Schema: sch}})
	if err != nil {
		t.Fatal(err)
	}
	link := hs.URL + resp.JoinPath + "&secret=" + sec.String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	evs := make([]*events, 2)
	var wg sync.WaitGroup
	for k, f := range preparedFiles {
		b, sum, err := Load("party.csv", []byte(f), sch, table.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			// px of the fourth row, 12, is beyond its scale of 10: 1, clipped.
			if got := sum.Preview[3].Values[0]; sum.Preview[3].Features[0] != 0 || got != 1 {
				t.Fatalf("summary row 3: features %v values %v, want px at 1", sum.Preview[3].Features, sum.Preview[3].Values)
			}
		}
		evs[k] = &events{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Run(ctx, link, Resume{}, b, session.WebSocket(64<<20), evs[k].add); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rows := make([][]map[int]float64, 2)
	for k, e := range evs {
		p := e.of("prepared")
		if len(p) != 1 || len(p[0].Preview) != 8 {
			t.Fatalf("party %d: prepared events %+v", k, p)
		}
		for _, r := range p[0].Preview {
			m := map[int]float64{}
			for i, f := range r.Features {
				m[f] = r.Values[i]
			}
			rows[k] = append(rows[k], m)
		}
	}
	px := []float64{0, 5, 10, 12, 3, 7, 1, 9}
	age := []float64{30, 41, 35, 62, 28, 55, 47, 33}
	bmi := []float64{21.5, 30, math.NaN(), 27.25, 19, 33, 24, 26}
	current := []bool{false, true, false, true, false, false, true, false}
	std := func(x []float64) (mean, sd float64) {
		n, s, q := 0.0, 0.0, 0.0
		for _, v := range x {
			if !math.IsNaN(v) {
				n, s, q = n+1, s+v, q+v*v
			}
		}
		mean = s / n
		return mean, math.Sqrt(q/n - mean*mean)
	}
	am, asd := std(age)
	bm, bsd := std(bmi)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*(1+math.Abs(b)) }
	for i := range 8 {
		a, b := rows[0][i], rows[1][i]
		if want := min(px[i]/10, 1); !near(a[0], want) {
			t.Errorf("row %d: px %v, want %v", i, a[0], want)
		}
		if want := (age[i] - am) / asd; !near(a[1], want) {
			t.Errorf("row %d: age %v, want %v", i, a[1], want)
		}
		if (b[2] == 1) == current[i] || (b[3] == 1) != current[i] || b[2]+b[3] != 1 {
			t.Errorf("row %d: smoker %v %v", i, b[2], b[3])
		}
		want := 0.0
		if !math.IsNaN(bmi[i]) {
			want = (bmi[i] - bm) / bsd
		}
		if !near(b[4], want) {
			t.Errorf("row %d: bmi %v, want %v", i, b[4], want)
		}
		if a[5]+b[5] != schema.InterceptValue || a[5]*b[5] != 0 {
			t.Errorf("row %d: intercept %v and %v, want %v at exactly one holder", i, a[5], b[5], float64(schema.InterceptValue))
		}
	}
}
