package protocol

import (
	"bytes"
	"encoding/gob"

	"github.com/hyfed/hyfed/shared/schema"
)

// A version-1 setup part held the configuration of before the zero value
// meant the defaults: its booleans on when set, and 0 shared directions
// for none. It restores as the federation it was.

// configV1 is Config as version 1 saved it.
type configV1 struct {
	Lambda           float64
	Loss, Step       string
	Inner            int
	IIC, Gamma       float64
	Fraction         float64
	Rounds           int
	Search           string
	Seed             uint64
	Clients          int
	NumFeatures      int
	BiasFeature      int
	BiasValue        float64
	FindBias         bool
	Quorum           float64
	SealPrimal       bool
	GroupSteps       bool
	SharedDirections int
	SolveOnce        bool
	Algo             string
	StepA, StepB, Mu float64
	Mode             string
	Keys             string
	KeyCommittee     int
	KeyThreshold     int
	Schema           *schema.Schema
}

func (o configV1) config() Config {
	c := Config{Lambda: o.Lambda, Loss: o.Loss, Step: o.Step, Inner: o.Inner, IIC: o.IIC, Gamma: o.Gamma,
		Fraction: o.Fraction, Rounds: o.Rounds, Search: o.Search, Seed: o.Seed, Clients: o.Clients,
		NumFeatures: o.NumFeatures, BiasFeature: o.BiasFeature, BiasValue: o.BiasValue, NoFindBias: Off(!o.FindBias),
		Quorum: o.Quorum, SealPrimal: o.SealPrimal, NoGroupSteps: Off(!o.GroupSteps),
		SharedDirections: Directions(o.SharedDirections), EveryHolderSolves: Off(!o.SolveOnce),
		Algo: o.Algo, StepA: o.StepA, StepB: o.StepB, Mu: o.Mu, Mode: o.Mode,
		Keys: o.Keys, KeyCommittee: o.KeyCommittee, KeyThreshold: o.KeyThreshold, Schema: o.Schema}
	if o.SharedDirections == 0 {
		c.SharedDirections = NoDirections
	}
	return c
}

// setupStateV1 is setupState as version 1 saved it.
type setupStateV1 struct {
	Version     int
	Scheme      string
	Config      configV1
	Fingerprint string
	NumFeatures int
	Clients     []helloState
	Norms       []byte
	Keys        *keyCheckpoint
	Prep        *prepCheckpoint
	Notices     []string
}

// decodeSetup reads a setup part of either version.
func decodeSetup(setup []byte) (setupState, error) {
	var v struct{ Version int }
	if err := gob.NewDecoder(bytes.NewReader(setup)).Decode(&v); err != nil {
		return setupState{}, err
	}
	var st setupState
	if v.Version != 1 {
		err := gob.NewDecoder(bytes.NewReader(setup)).Decode(&st)
		return st, err
	}
	var old setupStateV1
	if err := gob.NewDecoder(bytes.NewReader(setup)).Decode(&old); err != nil {
		return st, err
	}
	return setupState{Version: checkpointVersion, Scheme: old.Scheme, Config: old.Config.config(), Fingerprint: old.Fingerprint,
		NumFeatures: old.NumFeatures, Clients: old.Clients, Norms: old.Norms, Keys: old.Keys, Prep: old.Prep, Notices: old.Notices}, nil
}
