package protocol

import (
	"fmt"
	"math"

	"github.com/hyfed/hyfed/shared/dataset"
	"github.com/hyfed/hyfed/shared/partition"
	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
)

// The preparation of a federation with a schema (docs/own-data.md): every
// holder seals a code for each sample's label and the count, sum and sum
// of squares of each numeric column over its training rows; the server
// adds them per sample and per column and hands each holder the sums of
// its own samples and columns. From them every holder of a sample reaches
// the same label (or leaves the sample out, or finds a conflict) and every
// holder of a column the same scaling map, without any raw value or any
// one party's statistics leaving its owner.

// negativeCode is what a holder seals for a negative label (1 for a
// positive one, 0 for none): a sum over fewer than 2^14 holders then
// counts both classes exactly in the fixed point sealing keeps.
const negativeCode = 1.0 / (1 << 14)

// maxLabelHolders bounds a sample's holders so that its label codes decode.
const maxLabelHolders = 1<<14 - 1

// rawMagnitudes is the hello's power-of-two bound of each column of the
// participant's own file.
func rawMagnitudes(b *partition.Block) []int {
	out := make([]int, len(b.Features))
	for j := range out {
		m := 0.0
		for i := 0; i < b.N(); i++ {
			m = math.Max(m, math.Abs(b.X.At(i, j)))
		}
		out[j] = schema.Magnitude(m)
	}
	return out
}

// prepPart seals the block's label codes (sample layout) and its numeric
// columns' statistics (statistics layout), each statistic divided by the
// federation's training samples and the column's magnitude so that every
// sum stays within what sealing carries.
func (p *Participant) prepPart() (Message, error) {
	raw, s := p.raw, p.setup
	codes := make([]float64, raw.N())
	for i, y := range raw.Y {
		switch {
		case y > 0:
			codes[i] = 1
		case y < 0:
			codes[i] = negativeCode
		}
	}
	labels, err := seal.SealSlots(p.key, s.Slots, codes, nil)
	if err != nil {
		return Message{}, fmt.Errorf("participant: labels: %w", err)
	}
	missing := missingByColumn(raw)
	n := float64(s.NumTrain)
	var slots []int
	var vals []float64
	for j, sl := range s.StatSlots {
		if sl < 0 {
			continue
		}
		unit := math.Ldexp(1, -s.Magnitudes[j])
		var c, sum, sq float64
		for i := 0; i < raw.N(); i++ {
			if raw.Heldout[i] || missing[j][i] {
				continue
			}
			v := raw.X.At(i, j) * unit
			c++
			sum += v
			sq += v * v
		}
		slots = append(slots, sl, sl+1, sl+2)
		vals = append(vals, c/n, sum/n, sq/n)
	}
	stats, err := seal.SealSlots(p.key, slots, vals, nil)
	if err != nil {
		return Message{}, fmt.Errorf("participant: column statistics: %w", err)
	}
	return Message{Kind: KindPrepPart, Sealed: labels, Alpha: stats}, nil
}

// missingByColumn marks the empty cells of each column.
func missingByColumn(b *partition.Block) [][]bool {
	out := make([][]bool, len(b.Features))
	for _, c := range b.Raw.Missing {
		if out[c[1]] == nil {
			out[c[1]] = make([]bool, b.N())
		}
		out[c[1]][c[0]] = true
	}
	for j := range out {
		if out[j] == nil {
			out[j] = make([]bool, b.N())
		}
	}
	return out
}

// onPrep takes the sums of the preparation: it resolves every sample's
// label, scales every column with the federation's map, places the
// intercept, and goes on with the setup (the norms, if asked).
func (p *Participant) onPrep(m Message) ([]Message, error) {
	s := p.setup
	if s.Config.Schema == nil || p.raw == nil {
		return nil, fmt.Errorf("participant: prep in a federation without a schema")
	}
	codes, err := seal.OpenSlots(p.key, m.Sealed, s.Slots)
	if err != nil {
		return nil, fmt.Errorf("participant: prep: labels: %w", err)
	}
	var statSlots []int
	for _, sl := range s.StatSlots {
		if sl >= 0 {
			statSlots = append(statSlots, sl, sl+1, sl+2)
		}
	}
	stats, err := seal.OpenSlots(p.key, m.Alpha, statSlots)
	if err != nil {
		return nil, fmt.Errorf("participant: prep: column statistics: %w", err)
	}
	block, counts, err := p.prepared(codes, stats)
	if err != nil {
		return nil, err
	}
	p.block = block
	out, err := p.setupData()
	if err != nil || len(out) == 0 || out[0].Kind != KindNormsPart {
		return out, err
	}
	out[0].Labels = counts
	for _, mp := range p.maps {
		out[0].Scales = append(out[0].Scales, mp.Offset, mp.Scale)
	}
	return out, nil
}

// prepared builds the block the federation trains on from the raw one:
// labels resolved, columns scaled, the intercept placed. It returns the
// per-group counts of samples left out and of label conflicts.
func (p *Participant) prepared(codes, stats []float64) (*partition.Block, []int, error) {
	raw, s := p.raw, p.setup
	sch := s.Config.Schema
	counts := make([]int, 3*len(s.GroupKeys))
	y := make([]float64, raw.N())
	p.excluded = make([]bool, raw.N())
	every := sch.LabelPolicy() == schema.LabelsEveryHolder
	for i, v := range codes {
		if s.Holders[i] > maxLabelHolders {
			return nil, nil, fmt.Errorf("participant: prep: sample %d has %d holders, more than the %d its label codes count", i, s.Holders[i], maxLabelHolders)
		}
		pos := math.Floor(v + 1.0/(1<<16))
		neg := math.Round((v - pos) / negativeCode)
		g := s.Group[i]
		switch {
		case pos > 0 && neg > 0:
			counts[3*g+2]++
			p.excluded[i] = true
		case pos+neg == 0, every && int(pos+neg) < s.Holders[i]:
			p.excluded[i] = true
			if raw.Heldout[i] {
				counts[3*g+1]++
			} else {
				counts[3*g]++
			}
		case pos > 0:
			y[i] = 1
		default:
			y[i] = -1
		}
		if p.excluded[i] {
			y[i] = 1 // never read: the sample is neither trained nor scored
		}
	}
	g := sch.Divisor(seal.MaxAbs)
	cols := sch.Columns()
	ic := sch.InterceptColumn()
	p.maps = make([]schema.Map, len(raw.Features))
	st := 0
	total := float64(s.NumTrain)
	for j, f := range raw.Features {
		switch {
		case f == ic:
			p.maps[j] = schema.InterceptMap()
		case cols[f].Categorical():
			p.maps[j] = schema.CategoryMap(g)
		case cols[f].Scale > 0:
			p.maps[j] = schema.Declared(cols[f].Scale, g)
		default:
			c, sum, sq := stats[st], stats[st+1], stats[st+2]
			st += 3
			unit := math.Ldexp(1, s.Magnitudes[j])
			mean, sd := 0.0, 0.0
			if c > 0 {
				ms := sum / c
				mean = ms * unit
				sd = math.Sqrt(math.Max(0, sq/c-ms*ms)) * unit
			}
			p.maps[j] = schema.Standardize(c*total, mean, sd, g)
		}
	}
	missing := missingByColumn(raw)
	x := dataset.NewDense(raw.N(), len(raw.Features))
	intercept := make([]bool, len(s.GroupKeys))
	for _, lg := range s.Intercept {
		if lg < 0 || lg >= len(intercept) {
			return nil, nil, fmt.Errorf("participant: prep: intercept for local group %d of %d", lg, len(intercept))
		}
		intercept[lg] = true
	}
	for i := 0; i < raw.N(); i++ {
		for j, f := range raw.Features {
			var v float64
			switch {
			case f == ic:
				if intercept[s.Group[i]] {
					v = schema.InterceptValue
				}
			case missing[j][i]:
				v = 0 // the federation's mean, once centered; no category
			default:
				v = p.maps[j].Apply(raw.X.At(i, j))
			}
			x.Data[i*x.Cols+j] = v
		}
	}
	b := &partition.Block{Features: raw.Features, NumFeatures: raw.NumFeatures, IDs: raw.IDs, Y: y, Heldout: raw.Heldout, X: x}
	if err := b.Validate(); err != nil {
		return nil, nil, fmt.Errorf("participant: prep: %w", err)
	}
	return b, counts, nil
}

// isExcluded reports whether sample i is left out (no label the
// federation may use, or its group lost with a dropped holder): neither
// trained on nor scored.
func (p *Participant) isExcluded(i int) bool {
	return p.excluded != nil && p.excluded[i] || p.lost != nil && p.lost[p.setup.Group[i]]
}
