package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// v8Profile is the part of a V8 CPU profile (node --cpu-prof, Chrome's
// profiler) that self times need: the call tree's nodes and the samples,
// each a node id, with the microseconds since the sample before.
type v8Profile struct {
	Nodes []struct {
		ID        int `json:"id"`
		CallFrame struct {
			FunctionName string `json:"functionName"`
			URL          string `json:"url"`
		} `json:"callFrame"`
	} `json:"nodes"`
	Samples    []int   `json:"samples"`
	TimeDeltas []int64 `json:"timeDeltas"`
}

// v8Self is a function's self time in a profile.
type v8Self struct {
	Name    string
	Seconds float64
}

// v8Summary is a profile's self times by function, largest first.
type v8Summary struct {
	Total float64
	Funcs []v8Self
}

// readV8Profile reads a V8 CPU profile and sums its samples' time by
// function name (a sample's time is the delta to the next sample).
func readV8Profile(r io.Reader) (*v8Summary, error) {
	var p v8Profile
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("not a V8 CPU profile: %w", err)
	}
	if len(p.Nodes) == 0 {
		return nil, errors.New("not a V8 CPU profile: no nodes")
	}
	if len(p.TimeDeltas) != len(p.Samples) {
		return nil, fmt.Errorf("V8 CPU profile: %d samples but %d time deltas", len(p.Samples), len(p.TimeDeltas))
	}
	name := make(map[int]string, len(p.Nodes))
	for _, n := range p.Nodes {
		f := n.CallFrame.FunctionName
		if f == "" {
			f = "(anonymous " + n.CallFrame.URL[strings.LastIndex(n.CallFrame.URL, "/")+1:] + ")"
		}
		name[n.ID] = f
	}
	self := map[string]float64{}
	s := &v8Summary{}
	for k, id := range p.Samples {
		f, ok := name[id]
		if !ok {
			return nil, fmt.Errorf("V8 CPU profile: sample %d names node %d, which the profile does not have", k, id)
		}
		if k+1 < len(p.TimeDeltas) && p.TimeDeltas[k+1] > 0 {
			sec := float64(p.TimeDeltas[k+1]) / 1e6
			self[f] += sec
			s.Total += sec
		}
	}
	for f, sec := range self {
		s.Funcs = append(s.Funcs, v8Self{f, sec})
	}
	slices.SortFunc(s.Funcs, func(a, b v8Self) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), strings.Compare(a.Name, b.Name))
	})
	return s, nil
}

// writeTop prints the n functions with the most self time.
func (s *v8Summary) writeTop(w io.Writer, n int) {
	fmt.Fprintf(w, "%.1f ms sampled; self time by function:\n", 1e3*s.Total)
	for i, f := range s.Funcs {
		if i == n {
			break
		}
		pct := 0.0
		if s.Total > 0 {
			pct = 100 * f.Seconds / s.Total
		}
		fmt.Fprintf(w, "%9.1f ms %5.1f%%  %s\n", 1e3*f.Seconds, pct, f.Name)
	}
}
