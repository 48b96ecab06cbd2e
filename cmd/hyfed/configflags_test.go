package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/hyfed/hyfed/shared/experiment"
	"github.com/hyfed/hyfed/shared/protocol"
)

// TestConfigFlagsSameForExperimentAndCreate: hyfed experiment and hyfed
// create turn the same command line into the same protocol.Config (one
// registration, one set of defaults), and that Config validates.
func TestConfigFlagsSameForExperimentAndCreate(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--lambda", "1e-2", "--iic", "0.1", "--loss", "logistic", "--seal-primal"},
		{"--algo", "fedavg"},
		{"--algo", "hyfem-prox", "--step-a", "0.3"},
		{"--algo", "fedhybrid", "--loss", "logistic", "--mu", "0.05", "--mode", "mixed"},
		{"--algo", "fedhybrid", "--loss", "logistic", "--mu", "0.05", "--step-b", "0.2"},
		{"--keys", "threshold", "--key-committee", "5", "--key-threshold", "3"},
	} {
		efs := flag.NewFlagSet("experiment", flag.ContinueOnError)
		efs.SetOutput(io.Discard)
		var o experiment.Options
		configFlags(efs, &o.Config)
		var bf baselineFlags
		bf.register(efs)
		if err := efs.Parse(args); err != nil {
			t.Fatal(err)
		}
		bf.apply(&o.Config)

		cfs := flag.NewFlagSet("create", flag.ContinueOnError)
		cfs.SetOutput(io.Discard)
		var ff fedFlags
		ff.register(cfs)
		if err := cfs.Parse(args); err != nil {
			t.Fatal(err)
		}
		got := ff.request().Config
		want := o.Config
		want.Clients = got.Clients // create's --min-participants
		if got != want {
			t.Errorf("%v: create makes %+v, experiment %+v", args, got, want)
		}
		if err := want.Validate(); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	var ff fedFlags
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	ff.register(fs)
	if c := ff.request().Config; c.Lambda != protocol.DefaultLambda || c.IIC != protocol.DefaultIIC || c.Algo != protocol.AlgoHyFDCA {
		t.Errorf("create's defaults %+v, want protocol.Defaults", c)
	}
}

// Retired values are refused at once, before any data loads or any server
// is asked (the data and the server here do not exist), with a message
// that says what replaced them.
func TestRetiredValuesRefused(t *testing.T) {
	stepRetired := []string{`step "hyfed" was retired`, "the block step", "replaced it"}
	estimateRetired := []string{"--estimate was the retired hyfed step rule's local estimate", "the block step (the default)"}
	noData := "/no/such/data.libsvm"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"experiment", "--step", "hyfed", "--data", noData}, stepRetired},
		{[]string{"experiment", "--data", noData, "--step=hyfed"}, stepRetired},
		{[]string{"bench", "--step", "hyfed", "--data", noData}, stepRetired},
		{[]string{"create", "--server", "http://127.0.0.1:1", "--step", "hyfed"}, stepRetired},
		{[]string{"suite", "--steps", "hyfed", "--data", noData}, append([]string{"--steps hyfed"}, stepRetired...)},
		{[]string{"suite", "--steps", "block,hyfed", "--data", noData}, append([]string{"--steps hyfed"}, stepRetired...)},
		{[]string{"experiment", "--estimate", "holders", "--data", noData}, estimateRetired},
		{[]string{"create", "--server", "http://127.0.0.1:1", "--estimate", "holders"}, estimateRetired},
		{[]string{"experiment", "--step", "nonsense", "--data", noData}, []string{`step "nonsense": want block or paper`}},
	} {
		_, errOut, code := runCLI(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		last := lines[len(lines)-1] // after the flags' usage, if printed
		if code != 1 || !strings.HasPrefix(last, "hyfed "+c.args[0]+": ") {
			t.Errorf("%v: exit %d, last line %q", c.args, code, last)
		}
		for _, w := range c.want {
			if !strings.Contains(last, w) {
				t.Errorf("%v: %q does not say %q", c.args, last, w)
			}
		}
	}
}
