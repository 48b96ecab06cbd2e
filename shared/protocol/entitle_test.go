package protocol

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/seal"
	"github.com/hyfed/hyfed/shared/seal/threshold"
)

// cloneSwitch copies a switch request deeply enough to change its targets,
// keys and jobs without touching the original.
func cloneSwitch(m Message) Message {
	m.Targets = slices.Clone(m.Targets)
	m.OwnKeys = slices.Clone(m.OwnKeys)
	m.Keys = slices.Clone(m.Keys)
	m.Jobs = slices.Clone(m.Jobs)
	m.JobAt = slices.Clone(m.JobAt)
	m.ActiveSet = slices.Clone(m.ActiveSet)
	return m
}

// selfContained returns req carrying the own public keys of all its
// targets: any member takes it, whatever requests it got before.
func selfContained(req Message, own map[int][]byte) Message {
	m := cloneSwitch(req)
	chunks := m.Keys[len(m.OwnKeys):]
	m.OwnKeys, m.Keys = nil, nil
	for ti, to := range m.Targets {
		m.OwnKeys = append(m.OwnKeys, ti)
		m.Keys = append(m.Keys, own[to])
	}
	m.Keys = append(m.Keys, chunks...)
	return m
}

// retarget returns req with job j's chunk switched to participant to
// instead, to's authentic own public key added to the targets.
func retarget(req Message, j, to int, own []byte) Message {
	m := cloneSwitch(req)
	nt, nk := len(m.Targets), len(m.OwnKeys)
	m.Keys = slices.Concat(m.Keys[:nk], [][]byte{own}, m.Keys[nk:])
	m.OwnKeys = append(m.OwnKeys, nt)
	m.Targets = append(m.Targets, to)
	m.Jobs[j][0] = nt
	return m
}

// TestThresholdSwitchEntitlement: a server that deviates asks the
// committee to switch a sample group's summed chunk to a colluding
// participant that does not hold the group, with that participant's
// authentic own key. The key layer alone would do it: the active members'
// shares switch the chunk to the colluder's key, and the colluder opens the
// very values the group's holder opens. Every member refuses the request,
// naming the request, job, target and group; so it does a Gram chunk sent
// to a non-holder, positions outside the layout, a feature chunk in a
// federation that opens no feature aggregate, a chunk claimed at two
// positions and a request without positions, and a setup whose layout
// leaves the member out of its own group. The honest request passes.
func TestThresholdSwitchEntitlement(t *testing.T) {
	cfg := Config{Lambda: 0.05, Inner: 3, Rounds: 3, Seed: 1}
	_, f := keyFeds(t, cfg, 2, 2) // participants 0, 1 hold group A, 2, 3 group B; committee 0, 1, 2
	var req Message
	var setup *Setup
	f.mem.Observe = func(toServer bool, k int, m *Message) {
		if toServer {
			return
		}
		if m.Kind == KindSwitch && req.Kind == "" && m.Round >= 1 && slices.ContainsFunc(m.JobAt, func(at [2]int) bool { return at[0] == LayoutSamples }) {
			req = cloneSwitch(*m)
		}
		if m.Kind == KindSetup && k == 0 && setup == nil {
			setup = m.Setup
		}
	}
	f.run(t)
	if req.Kind == "" || setup == nil {
		t.Fatal("no switch request or member setup seen")
	}
	ks, c := f.coord.keys, f.coord
	req = selfContained(req, ks.own)
	for _, id := range req.ActiveSet {
		if _, err := f.mem.Participant(id - 1).Handle(cloneSwitch(req)); err != nil {
			t.Fatalf("the honest request, member %d: %v", id-1, err)
		}
	}

	// A sample-layout job and a participant outside its group.
	j := slices.IndexFunc(req.JobAt, func(at [2]int) bool { return at[0] == LayoutSamples })
	if j < 0 {
		t.Fatalf("no sample-layout job in %v", req.JobAt)
	}
	gi := c.slotGroup(req.JobAt[j][1] * c.scheme.ChunkLen())
	holder := req.Targets[req.Jobs[j][0]]
	colluder := -1
	for k := range c.clients {
		if !slices.Contains(c.groups[gi].holders, k) {
			colluder = k
			break
		}
	}
	if colluder < 0 {
		t.Fatalf("group %d is held by everyone", gi)
	}

	// Without the check: the key layer switches it, and the colluder reads it.
	chunk, err := c.scheme.Unmarshal(req.Keys[len(req.OwnKeys)+req.Jobs[j][1]])
	if err != nil {
		t.Fatal(err)
	}
	opened := func(to int) []float64 {
		t.Helper()
		active := make([]threshold.PartyID, len(req.ActiveSet))
		var set []*threshold.SwitchShare
		for i, id := range req.ActiveSet {
			active[i] = threshold.PartyID(id)
		}
		for _, id := range req.ActiveSet {
			pk := f.mem.Participant(id - 1).keys
			target, err := pk.fed.UnmarshalOwnPublicKey(ks.own[to])
			if err != nil {
				t.Fatal(err)
			}
			sh, err := pk.party.SwitchShares([]seal.Chunk{chunk}, active, []*threshold.OwnPublicKey{target}, [][2]int{{0, 0}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := sh[0].Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ks.fed.UnmarshalSwitchShare(b) // as the coordinator takes it
			if err != nil {
				t.Fatal(err)
			}
			set = append(set, got)
		}
		sw, err := ks.fed.AggregateSwitch(chunk, set)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := f.mem.Participant(to).key.Open(sw.Chunk)
		if err != nil {
			t.Fatal(err)
		}
		return vals
	}
	want, got := opened(holder), opened(colluder)
	if !slices.Equal(want, got) || !slices.ContainsFunc(want, func(v float64) bool { return v != 0 }) {
		t.Fatalf("the key layer alone: colluder %d does not open what holder %d opens", colluder, holder)
	}

	per := gramChunks(blockPicks(f.coord.cfg), c.scheme.ChunkLen())
	total := 0
	for _, g := range c.groups {
		total += g.chunks
	}
	badAt := func(at [2]int) Message {
		m := cloneSwitch(req)
		m.JobAt[j] = at
		return m
	}
	twice := cloneSwitch(req)
	twice.Jobs = append(twice.Jobs, twice.Jobs[j])
	twice.JobAt = append(twice.JobAt, [2]int{LayoutSamples, req.JobAt[j][1] + 1})
	noAt := cloneSwitch(req)
	noAt.JobAt = nil
	gram := retarget(req, j, colluder, ks.own[colluder])
	gram.JobAt[j] = [2]int{LayoutGram, gi * per}
	cases := []struct {
		name string
		m    Message
		want string
	}{
		{"sample chunk to a non-holder", retarget(req, j, colluder, ks.own[colluder]),
			"participant " + strconv.Itoa(colluder) + " does not hold sample group " + strconv.Itoa(gi)},
		{"Gram chunk to a non-holder", gram, "participant " + strconv.Itoa(colluder) + " does not hold sample group " + strconv.Itoa(gi)},
		{"sample chunk past the layout", badAt([2]int{LayoutSamples, total}), "outside the layout's groups"},
		{"Gram chunk past the groups", badAt([2]int{LayoutGram, len(c.groups) * per}), "outside the 2 groups' Gram chunks"},
		{"feature chunk without a feature aggregate", badAt([2]int{LayoutFeatures, 0}), "opens no aggregate over features"},
		{"unknown layout", badAt([2]int{7, 0}), "layout 7"},
		{"one chunk at two positions", twice, "claimed at layout 0 chunk"},
		{"no positions", noAt, "positions for"},
	}
	for _, tc := range cases {
		for _, id := range req.ActiveSet {
			_, err := f.mem.Participant(id - 1).Handle(tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "switch request "+strconv.Itoa(req.Batch)) {
				t.Errorf("%s, member %d: %v, want an error naming request %d and saying %q", tc.name, id-1, err, req.Batch, tc.want)
			}
		}
	}

	// The setup's layout: a member checks its own groups in it.
	bad := *setup
	bad.Layout = slices.Clone(setup.Layout)
	own := c.slotGroup(setup.Slots[0])
	bad.Layout[own].Holders = slices.DeleteFunc(slices.Clone(bad.Layout[own].Holders), func(h int) bool { return h == 0 })
	if _, err := f.mem.Participant(0).Handle(Message{Kind: KindSetup, Setup: &bad}); err == nil || !strings.Contains(err.Error(), "whose holders are") {
		t.Errorf("a layout without the member in its group: %v", err)
	}
	none := *setup
	none.Layout = nil
	if _, err := f.mem.Participant(0).Handle(Message{Kind: KindSetup, Setup: &none}); err == nil || !strings.Contains(err.Error(), "no sample layout") {
		t.Errorf("a member's setup without a layout: %v", err)
	}
	if _, err := f.mem.Participant(0).Handle(Message{Kind: KindSetup, Setup: setup}); err != nil {
		t.Errorf("the honest setup: %v", err)
	}
}
