package protocol

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hyfed/hyfed/shared/schema"
	"github.com/hyfed/hyfed/shared/seal"
)

// statLayout lays the numeric columns' statistics out by holder set, as
// the sample layout lays samples out: each set's columns (three slots a
// column: count, sum, sum of squares) start on a chunk boundary, so a
// participant is sent only the statistics of columns it holds.
type statLayout struct {
	slot       map[int]int // feature -> its first slot
	groups     []statGroup
	chunkGroup []int // per chunk: its group
	magnitude  map[int]int
}

type statGroup struct {
	holders []int
	start   int
	size    int // slots (3 a column)
}

// prepState is what the preparation found: the sums the holders opened
// (kept for those that return), the samples left out per group and every
// column's scaling map.
type prepState struct {
	labels, stats seal.Vec
	leftTrain     []int // per group: training samples without a label
	leftHeld      []int // per group: held-out samples without a label
	maps          []schema.Map
	ok            []bool // maps[f] was reported
}

// refusal is a registration the federation cannot take: the participants
// named are refused and the federation waits for others.
type refusal struct {
	who []int
	err error
}

func (r *refusal) Error() string { return r.err.Error() }

// alignSchema checks the registrations of a federation with a schema and
// lays out the statistics: every participant holds the intercept, and no
// two holders of a sample hold the same column (its value would count
// twice).
func (c *Coordinator) alignSchema() error {
	sch := c.cfg.Schema
	cols := sch.Columns()
	ic := sch.InterceptColumn()
	for k, cs := range c.clients {
		h := cs.hello
		if h == nil {
			continue
		}
		if len(h.Magnitudes) != len(h.Features) {
			return &refusal{[]int{k}, fmt.Errorf("%s: %d magnitudes for %d features: join with a file read against the federation's schema", c.name(k), len(h.Magnitudes), len(h.Features))}
		}
		if ic >= 0 && !slices.Contains(h.Features, ic) {
			return &refusal{[]int{k}, fmt.Errorf("%s does not hold the intercept column", c.name(k))}
		}
		if !h.Labelled && sch.LabelPolicy() == schema.LabelsEveryHolder {
			return &refusal{[]int{k}, fmt.Errorf("%s's file has no %q column: this federation needs the label in every file", c.name(k), sch.Label.Column)}
		}
	}
	if r := c.heldTwice(ic, func(f int) string { return fmt.Sprintf("column %q", cols[f].Name) }); r != nil {
		return r
	}
	// The statistics layout, by holder set, in order of each set's first
	// column.
	st := statLayout{slot: map[int]int{}, magnitude: map[int]int{}}
	byKey := map[string]int{}
	var members [][]int
	for f := range cols {
		if f == ic || cols[f].Categorical() || cols[f].Scale > 0 {
			continue // no statistics: fixed maps
		}
		var holders []int
		for k, cs := range c.clients {
			if cs.hello == nil {
				continue
			}
			if j, ok := slices.BinarySearch(cs.hello.Features, f); ok {
				holders = append(holders, k)
				if e, seen := st.magnitude[f]; !seen || cs.hello.Magnitudes[j] > e {
					st.magnitude[f] = cs.hello.Magnitudes[j]
				}
			}
		}
		if len(holders) == 0 {
			continue // a column nobody holds: its weight stays 0
		}
		key := fmt.Sprint(holders)
		gi, ok := byKey[key]
		if !ok {
			gi = len(st.groups)
			byKey[key] = gi
			st.groups = append(st.groups, statGroup{holders: holders})
			members = append(members, nil)
		}
		members[gi] = append(members[gi], f)
	}
	sizes := make([]int, len(st.groups))
	for gi := range st.groups {
		sizes[gi] = 3 * len(members[gi])
	}
	cl := c.scheme.ChunkLen()
	starts, total := seal.PadLayout(cl, sizes)
	st.chunkGroup = make([]int, total/cl)
	for gi := range st.groups {
		st.groups[gi].start, st.groups[gi].size = starts[gi], sizes[gi]
		for j := range (sizes[gi] + cl - 1) / cl {
			st.chunkGroup[starts[gi]/cl+j] = gi
		}
		for j, f := range members[gi] {
			st.slot[f] = starts[gi] + 3*j
		}
	}
	c.stats = &st
	for _, cs := range c.clients {
		if cs.hello == nil {
			continue
		}
		cs.statChunks = map[int]bool{}
		for _, f := range cs.hello.Features {
			if sl, ok := st.slot[f]; ok {
				cs.statChunks[sl/cl] = true
			}
		}
	}
	return nil
}

// prepareFor adds to a participant's setup what its preparation needs.
func (c *Coordinator) prepareFor(k int, s *Setup) {
	cs := c.clients[k]
	s.StatSlots = make([]int, len(cs.features))
	s.Magnitudes = make([]int, len(cs.features))
	for j, f := range cs.features {
		s.StatSlots[j] = -1
		if sl, ok := c.stats.slot[f]; ok {
			s.StatSlots[j] = sl
			s.Magnitudes[j] = c.stats.magnitude[f]
		}
	}
	// The intercept of a group's samples comes from its first holder.
	for lg, g := range cs.groups {
		if c.groups[g].holders[0] == k {
			s.Intercept = append(s.Intercept, lg)
		}
	}
}

// statExtent is the span of chunk ci of the statistics layout.
func (c *Coordinator) statExtent(ci int) int {
	cl := c.scheme.ChunkLen()
	g := c.stats.groups[c.stats.chunkGroup[ci]]
	return min(cl, g.start+g.size-ci*cl)
}

// checkPrepPart checks a preparation reply's statistics: only the chunks
// of the client's columns, each sealed over its extent.
func (c *Coordinator) checkPrepPart(k int, m Message) error {
	for ci := range m.Alpha {
		if !c.clients[k].statChunks[ci] {
			return fmt.Errorf("prep-part: statistics chunk %d holds none of the client's columns", ci)
		}
	}
	return c.checkLens(m.Kind, m.Alpha, c.statExtent)
}

// checkPrepCounts checks what a norms-part after a preparation adds.
func (c *Coordinator) checkPrepCounts(k int, m Message) error {
	cs := c.clients[k]
	if len(m.Labels) != 3*len(cs.groups) || len(m.Scales) != 2*len(cs.features) {
		return fmt.Errorf("norms-part: %d label counts for %d groups and %d scales for %d features", len(m.Labels), len(cs.groups), len(m.Scales), len(cs.features))
	}
	for lg, g := range cs.groups {
		for _, v := range m.Labels[3*lg : 3*lg+3] {
			if v < 0 || v > c.groups[g].size {
				return fmt.Errorf("norms-part: label count %d outside 0..%d", v, c.groups[g].size)
			}
		}
	}
	for j := 0; j < len(m.Scales); j += 2 {
		if o, s := m.Scales[j], m.Scales[j+1]; math.IsNaN(o) || math.IsInf(o, 0) || !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("norms-part: scaling map (%v, %v) of feature %d", o, s, cs.features[j/2])
		}
	}
	return nil
}

// prepIn sums the preparation's replies and hands every participant the
// sums of its samples and columns; the norms follow.
func (c *Coordinator) prepIn(p *phaseState) {
	if len(p.dropped) > 0 {
		// Sums without every holder are wrong for good: start again once
		// they are back.
		c.started = false
		return
	}
	labels, stats := seal.Vec{}, seal.Vec{}
	for _, k := range sortedKeys(p.replies) {
		m := p.replies[k]
		if err := seal.Accumulate(c.scheme, labels, m.Sealed); err != nil {
			c.fail(fmt.Errorf("prepare: labels: %w", err))
			return
		}
		if err := seal.Accumulate(c.scheme, stats, m.Alpha); err != nil {
			c.fail(fmt.Errorf("prepare: column statistics: %w", err))
			return
		}
	}
	c.prep = &prepState{labels: labels, stats: stats}
	all := c.connected()
	for _, k := range all {
		c.sendPrep(k)
	}
	c.awaitNorms(all)
}

// sendPrep sends participant k the preparation's sums of its samples and
// columns.
func (c *Coordinator) sendPrep(k int) {
	cs := c.clients[k]
	var slots []int
	for _, f := range cs.features {
		if sl, ok := c.stats.slot[f]; ok {
			slots = append(slots, sl)
		}
	}
	c.send(k, Message{Kind: KindPrep, Sealed: seal.Restrict(c.scheme, c.prep.labels, cs.slots),
		Alpha: seal.Restrict(c.scheme, c.prep.stats, slots)})
}

// prepResolve takes what the holders found from the sums: the samples they
// leave out for want of a label (every holder of a group must count
// alike), the conflicting labels (their holders are refused) and every
// column's scaling map (every holder must apply the same). It returns
// false when the federation does not go on to the first round.
func (c *Coordinator) prepResolve(replies map[int]Message) bool {
	ps := c.prep
	ng := len(c.groups)
	counted := make([][3]int, ng)
	seen := make([]int, ng) // the first holder that counted, +1
	conflict := map[int]int{}
	ps.maps = make([]schema.Map, c.numFeatures)
	ps.ok = make([]bool, c.numFeatures)
	for _, k := range sortedKeys(replies) {
		m, cs := replies[k], c.clients[k]
		for lg, g := range cs.groups {
			got := [3]int{m.Labels[3*lg], m.Labels[3*lg+1], m.Labels[3*lg+2]}
			if seen[g] == 0 {
				counted[g], seen[g] = got, k+1
			} else if counted[g] != got {
				c.fail(fmt.Errorf("%s and %s count the labels of their shared samples differently (%v, %v)", c.name(seen[g]-1), c.name(k), counted[g], got))
				return false
			}
			if got[2] > 0 {
				conflict[g] = got[2]
			}
		}
		for j, f := range cs.features {
			mp := c.cfg.Schema.Clip(f, schema.Map{Offset: m.Scales[2*j], Scale: m.Scales[2*j+1]}, c.cfg.Schema.Divisor(seal.MaxAbs))
			if ps.ok[f] && (ps.maps[f].Offset != mp.Offset || ps.maps[f].Scale != mp.Scale) {
				c.fail(fmt.Errorf("%s scales column %d unlike its other holders", c.name(k), f))
				return false
			}
			ps.maps[f], ps.ok[f] = mp, true
		}
	}
	if len(conflict) > 0 {
		var who []int
		n := 0
		for g, cnt := range conflict {
			n += cnt
			for _, k := range c.groups[g].holders {
				if c.clients[k].hello.Labelled && !slices.Contains(who, k) {
					who = append(who, k)
				}
			}
		}
		slices.Sort(who)
		c.refuse(&refusal{who, Errorf(CodeSchema, "the labels of %s disagree on %d shared sample(s): the federation cannot know which is right; fix the files and join again",
			c.names(who), n)})
		return false
	}
	ps.leftTrain, ps.leftHeld = make([]int, ng), make([]int, ng)
	for g := range counted {
		ps.leftTrain[g], ps.leftHeld[g] = counted[g][0], counted[g][1]
	}
	if err := c.applyLeftOut(); err != nil {
		c.fail(err)
		return false
	}
	return true
}

// applyLeftOut takes the samples left out for want of a label out of the
// training counts (after the preparation, and again after a restore).
func (c *Coordinator) applyLeftOut() error {
	ps := c.prep
	for g := range c.groups {
		c.groups[g].train -= ps.leftTrain[g]
		c.numTrain -= ps.leftTrain[g]
		c.numHeld -= ps.leftHeld[g]
	}
	for _, cs := range c.clients {
		if cs.hello == nil {
			continue
		}
		for _, g := range cs.groups {
			cs.trainN -= ps.leftTrain[g]
		}
	}
	if c.numTrain < 1 {
		return errors.New("no training sample has a label the federation may use")
	}
	return nil
}

// refuse turns participants away before the first round, each told why,
// and forgets their registrations: the federation waits for others, its
// remaining participants still connected, and starts again when enough
// have registered.
func (c *Coordinator) refuse(r *refusal) {
	for _, k := range r.who {
		cs := c.clients[k]
		c.send(k, Message{Kind: KindError, Code: CodeSchema, Close: true, Err: r.err.Error()})
		cs.hello, cs.connected, cs.ready = nil, false, false
		cs.refused = r.err.Error()
	}
	c.note(r.err.Error())
	c.started, c.aligned, c.phase = false, false, nil
	c.prep, c.stats, c.norms = nil, nil, nil
	if c.cfg.NumFeatures == 0 {
		c.numFeatures = 0 // the next start counts again
	}
	if !c.holdStart && c.numConnected() >= c.cfg.Clients {
		c.begin()
	}
}

// LeftOut returns the samples the federation leaves out because no label
// it may use is held for them (a federation with a schema, after its
// preparation).
func (c *Coordinator) LeftOut() int {
	if c.prep == nil || c.prep.leftTrain == nil {
		return 0
	}
	n := 0
	for g := range c.groups {
		n += c.prep.leftTrain[g] + c.prep.leftHeld[g]
	}
	return n
}

// Scaling returns every column's scaling map (a federation with a schema,
// after its preparation; nil otherwise): the map from a raw value to the
// value the model was trained on. A column no participant holds keeps the
// zero map's weight of 0 and reads as the identity.
func (c *Coordinator) Scaling() []schema.Map {
	if c.prep == nil || c.prep.maps == nil {
		return nil
	}
	out := slices.Clone(c.prep.maps)
	for f := range out {
		if !c.prep.ok[f] {
			out[f] = schema.Map{Scale: 1}
		}
	}
	return out
}

// Notices returns what the federation told its organizer: participants
// refused and why.
func (c *Coordinator) Notices() []string { return c.notices }

// ErrData marks a participant's error that its data causes (a file that
// does not fit the federation, a value too large to seal): reconnecting
// does not help, so the participant says why and stops (Message of kind
// KindError to the coordinator).
var ErrData = errors.New("the participant's data cannot take part")

// maxNotices bounds what a federation keeps of its notices.
const maxNotices = 64

// note keeps a notice for the organizer.
func (c *Coordinator) note(text string) {
	if len(text) > 400 {
		text = text[:400] + "…"
	}
	if len(c.notices) < maxNotices {
		c.notices = append(c.notices, text)
	}
}

// quit takes a participant that says it cannot go on: named with its
// reason for the organizer; before the first round it is refused (the
// federation waits for others), later it counts as gone.
func (c *Coordinator) quit(k int, why string) error {
	note := fmt.Sprintf("%s stopped: %s", c.name(k), why)
	if len(c.history) == 0 {
		c.refuse(&refusal{[]int{k}, errors.New(note)})
		return nil
	}
	c.note(note)
	c.clients[k].refused = note
	c.send(k, Message{Kind: KindError, Code: CodeStopped, Close: true, Err: "the federation goes on without you: " + why})
	c.disconnect(k)
	return nil
}

// SetNamer gives the names participants are shown under (the server's),
// for the messages that name them.
func (c *Coordinator) SetNamer(name func(k int) string) { c.namer = name }

// names lists participants for people: "A", "A and B", "A, B and C".
func (c *Coordinator) names(ks []int) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = c.name(k)
	}
	if len(out) < 2 {
		return strings.Join(out, "")
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}

func (c *Coordinator) name(k int) string {
	if c.namer != nil {
		return c.namer(k)
	}
	return fmt.Sprintf("participant %d", k)
}
