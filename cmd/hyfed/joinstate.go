package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hyfed/hyfed/shared/session"
)

// joinState is what hyfed join --state keeps of its participant, so that a
// join killed and started again takes back its seat (the session token) and,
// with threshold keys, its party of the federation's key (a committee
// member's share). The key state is sealed under a key derived from the
// link secret (protocol.Participant.KeyState); the link secret is not kept
// here. The session token is: the file is written 0600.
type joinState struct {
	Federation string `json:"federation"`
	Server     string `json:"server"`
	Session    string `json:"session,omitempty"`
	KeyState   []byte `json:"key_state,omitempty"`
}

// loadJoinState reads the state file for the link's federation: a missing
// file is a fresh start, a file of another federation an error (its seat
// and share are not this link's).
func loadJoinState(path string, l session.Link) (*joinState, error) {
	st := &joinState{Federation: l.ID, Server: l.Base}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	var got joinState
	if err := json.Unmarshal(b, &got); err != nil {
		return nil, fmt.Errorf("--state %s: not a hyfed join state file: %w", path, err)
	}
	if got.Federation != l.ID || got.Server != l.Base {
		return nil, fmt.Errorf("--state %s: the state of federation %s on %s, not of this link's (%s on %s): give another file", path, got.Federation, got.Server, l.ID, l.Base)
	}
	return &got, nil
}

// save writes the state to path with 0600 permissions, through a file beside
// it renamed over it, so that a kill mid-write leaves the old state whole.
func (st *joinState) save(path string) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing
	// CreateTemp makes it 0600 already; said here because it holds the
	// session token.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("--state: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("--state: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("--state: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--state: writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	return nil
}
