package protocol

import (
	"fmt"
	"math"
	"slices"

	"github.com/hyfed/hyfed/shared/seal"
)

// check validates the plaintext fields of a reply before it is accepted.
func (c *Coordinator) check(k int, m Message) error {
	cs := c.clients[k]
	finite := func(name string, v ...float64) error {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: field %s holds a non-finite number", m.Kind, name)
			}
		}
		return nil
	}
	switch m.Kind {
	case KindPrimal, KindDirPart:
		if c.cfg.SealPrimal {
			if len(m.HatW) != 0 || len(m.DW) != 0 {
				return fmt.Errorf("%s: plaintext primal values under sealed primal", m.Kind)
			}
			if err := finite("DConj", m.DConj, m.DConjCentered); err != nil {
				return err
			}
			if m.Kind == KindDirPart {
				if err := c.checkDirValues(k, m); err != nil {
					return err
				}
			}
			return c.checkFeatureChunks(k, m)
		}
	}
	if m.Kind == KindDirPart {
		if !(m.GammaMax >= 0) || math.IsInf(m.GammaMax, 0) {
			return fmt.Errorf("dir-part: step limit %v is not a finite non-negative number", m.GammaMax)
		}
	}
	switch m.Kind {
	case KindKeyShare, KindKeyDealt, KindKeyReady:
		return c.checkKeys(k, m)
	case KindOPRFKey, KindOPRFDealt, KindOPRFBlinded, KindOPRFEvaluated, KindPseudonyms:
		return c.checkOPRF(k, m)
	case KindGramPart:
		// Only the chunks of the client's updating groups' Grams.
		per := gramChunks(blockPicks(c.cfg), c.scheme.ChunkLen())
		for ci := range m.Sealed {
			gi := ci / per
			if _, ok := cs.localGroup[gi]; !ok || !slices.Contains(c.updating, gi) {
				return fmt.Errorf("gram-part: sealed chunk %d lies outside the Grams of the client's updating groups", ci)
			}
		}
		return c.checkLens(m.Kind, m.Sealed, c.gramExtent)
	case KindSolved:
		if len(m.Alpha) > 0 && !c.flow.groupSteps {
			return fmt.Errorf("solved: a centered direction in a round without group steps")
		}
		for _, v := range []seal.Vec{m.Sealed, m.Alpha} {
			for ci := range v {
				if ci < 0 || ci >= len(c.chunkGroup) || !c.flow.solves[k][c.chunkGroup[ci]] {
					return fmt.Errorf("solved: sealed chunk %d lies outside the groups the client solves", ci)
				}
			}
			if err := c.checkLens(m.Kind, v, c.sampleExtent); err != nil {
				return err
			}
		}
		return nil
	case KindLocalPart:
		if len(m.W) != 0 || len(m.HatW) != 0 || len(m.DW) != 0 {
			return fmt.Errorf("local-part: plaintext weights: they travel sealed only")
		}
		return c.rule.checkLocal(c, k, m)
	case KindOpened:
		if len(m.W) != c.numFeatures {
			return fmt.Errorf("opened: %d values for %d features", len(m.W), c.numFeatures)
		}
		return finite("W", m.W...)
	case KindPrimal:
		if len(m.HatW) != len(cs.features) {
			return fmt.Errorf("primal: %d values for %d features", len(m.HatW), len(cs.features))
		}
		return finite("HatW", m.HatW...)
	case KindDirPart:
		if len(m.DW) != len(cs.features) {
			return fmt.Errorf("dir-part: %d values for %d features", len(m.DW), len(cs.features))
		}
		if err := finite("DW", m.DW...); err != nil {
			return err
		}
		if err := finite("DConj", m.DConj, m.DConjCentered); err != nil {
			return err
		}
		return c.checkDirValues(k, m)
	case KindPrepPart:
		if err := c.checkPrepPart(k, m); err != nil {
			return err
		}
	case KindNormsPart:
		if c.prep != nil {
			if err := c.checkPrepCounts(k, m); err != nil {
				return err
			}
		}

	case KindMetrics:
		n := 1
		if len(c.phaseGrid) > 0 {
			n = len(c.phaseGrid)
		}
		if len(m.GridLoss) != n || len(m.GridConj) != n || len(m.GridWDot) != n || len(m.GridTrainOK) != n || len(m.GridHeldOK) != n {
			return fmt.Errorf("metrics: want %d priced steps", n)
		}
		if m.TrainN < 0 || m.HeldN < 0 {
			return fmt.Errorf("metrics: counts out of range")
		}
		for i := 0; i < n; i++ {
			if m.GridTrainOK[i] < 0 || m.GridHeldOK[i] < 0 {
				return fmt.Errorf("metrics: counts out of range")
			}
		}
		if err := finite("GridLoss", m.GridLoss...); err != nil {
			return err
		}
		if err := finite("GridWDot", m.GridWDot...); err != nil {
			return err
		}
		if err := finite("GridConj", m.GridConj...); err != nil {
			return err
		}
		return c.checkMetricValues(k, m)
	}
	for ci := range m.Sealed {
		if !cs.chunks[ci] {
			return fmt.Errorf("%s: sealed chunk %d holds none of the client's samples", m.Kind, ci)
		}
	}
	return c.checkLens(m.Kind, m.Sealed, c.sampleExtent)
}

// checkLens checks that every chunk of v, sealed in a message of kind,
// seals as many values as its layout gives it (extent: seal.SealSlots's
// span): a chunk of another length would not add to the other holders' and
// fail the sum.
func (c *Coordinator) checkLens(kind Kind, v seal.Vec, extent func(ci int) int) error {
	spans := seal.Spans(c.scheme)
	for ci, ch := range v {
		want := c.scheme.ChunkLen()
		if spans {
			want = extent(ci)
		}
		if n := seal.Len(c.scheme, ch); n != want {
			return fmt.Errorf("%s: sealed chunk %d holds %d values, its layout %d", kind, ci, n, want)
		}
	}
	return nil
}

// sampleExtent is the span of chunk ci of the sample layout: its group's
// slots in it (the group's holders seal them all).
func (c *Coordinator) sampleExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	g := c.groups[c.chunkGroup[ci]]
	return min(cl, g.start+g.size-ci*cl)
}

// featureExtent is the span of chunk ci of the feature layout: every
// feature in it.
func (c *Coordinator) featureExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	return min(cl, c.numFeatures-ci*cl)
}

// gramExtent is the span of chunk ci of the Gram layout: its part of the
// packed triangle of gramPicks picks of the group (at most 0: a chunk the
// triangle does not reach).
func (c *Coordinator) gramExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	per := gramChunks(blockPicks(c.cfg), cl)
	h := gramPicks(c.cfg, c.groups[ci/per].train)
	return min(cl, h*(h+1)/2-ci%per*cl)
}

// checkFeatureChunks checks that a sealed primal vector (feature layout)
// has chunks only where the client has features.
func (c *Coordinator) checkFeatureChunks(k int, m Message) error {
	cl := c.scheme.ChunkLen()
	has := map[int]bool{}
	for _, f := range c.clients[k].features {
		has[f/cl] = true
	}
	for ci := range m.Sealed {
		if !has[ci] {
			return fmt.Errorf("%s: sealed chunk %d holds none of the client's features", m.Kind, ci)
		}
	}
	return c.checkLens(m.Kind, m.Sealed, c.featureExtent)
}
