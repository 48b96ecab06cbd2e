package experiment

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/hyfed/hyfed/shared/central"
	"github.com/hyfed/hyfed/shared/loss"
	"github.com/hyfed/hyfed/shared/protocol"
)

// go test -run TestDiagGroups ./shared/experiment (DIAG=1)
func TestDiagGroups(t *testing.T) {
	if os.Getenv("DIAG") == "" {
		t.Skip()
	}
	data, part, lname := os.Getenv("DIAG_DATA"), os.Getenv("DIAG_PART"), os.Getenv("DIAG_LOSS")
	rounds, _ := strconv.Atoi(os.Getenv("DIAG_ROUNDS"))
	o := Options{Data: data, Partition: part, Plaintext: true, Seed: 1}
	o.Config = protocol.Defaults()
	o.Config.Loss, o.Config.Rounds = lname, rounds
	o.Config.NoGroupSteps = protocol.Off(os.Getenv("DIAG_GS") == "")
	if s := os.Getenv("DIAG_STEP"); s != "" {
		o.Config.Step = s
	}
	p, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := loss.Parse(lname)
	r, err := central.Solve(context.Background(), p.Data, central.Config{Lambda: o.Config.Lambda, Loss: l, Tol: 1e-10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	o.PStar = r.Primal
	idx := map[string]int{}
	for i, id := range p.Data.IDs {
		idx[id] = i
	}
	last := -1
	o.Script = func(m *protocol.Memory, c *protocol.Coordinator) {
		h := c.History()
		if len(h) == 0 || len(h)-1 == last {
			return
		}
		last = len(h) - 1
		rd := h[last].Round
		if rd%20 != 0 && rd > 5 {
			return
		}
		line := fmt.Sprintf("round %d D=%.8f P*=%.8f", rd, h[last].Dual, r.Primal)
		seen := map[string]bool{}
		for k := range p.Blocks {
			b := &p.Blocks[k]
			a := m.Participant(k).Alpha()
			var sd, sdy float64
			first := ""
			for i, id := range b.IDs {
				if b.Heldout[i] {
					continue
				}
				if first == "" {
					first = id
				}
				j := idx[id]
				sd += a[i] - r.Alpha[j]
				sdy += (a[i] - r.Alpha[j]) * b.Y[i]
			}
			if seen[first] {
				continue
			}
			seen[first] = true
			line += fmt.Sprintf(" | c%d sum(a-a*)=%+.3f sum(a-a*)y=%+.3f", k, sd, sdy)
		}
		fmt.Println(line)
	}
	s, err := RunPrepared(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("final rel", s.RelativeLoss, "rounds_to", s.RoundsTo)
}
