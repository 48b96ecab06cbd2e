package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
)

// writeFileAtomic replaces path with data so that a crash at any moment
// leaves either the old file or the new one: temporary file, fsync,
// rename, fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// newToken returns a random URL-safe token.
func newToken(nbytes int) string {
	b := make([]byte, nbytes)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the OS has no randomness: nothing sensible to do
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is what the server keeps of a token: a leaked data directory
// does not let anyone act as the organizer or a participant.
func hashToken(t string) string {
	h := sha256.Sum256([]byte("hyfed token " + t))
	return hex.EncodeToString(h[:])
}

// meta is a federation's record on disk (meta.json): configuration,
// token hashes and sessions. The coordinator's state lives beside it in
// setup.bin and round.bin.
type meta struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Created      time.Time       `json:"created"`
	Algo         string          `json:"algo"`
	Scheme       string          `json:"scheme"`
	Config       protocol.Config `json:"config"`
	Fingerprint  string          `json:"fingerprint"`
	RoundTimeout Duration        `json:"round_timeout"`
	AutoStart    bool            `json:"auto_start"`
	AdminHash    string          `json:"admin_hash"`
	InviteHash   string          `json:"invite_hash"`
	Sessions     []sessionMeta   `json:"sessions"`
	Stopped      bool            `json:"stopped,omitempty"`
	Demo         bool            `json:"demo,omitempty"`
	PStar        float64         `json:"pstar,omitempty"`
}

type sessionMeta struct {
	Hash   string `json:"hash"`
	Client int    `json:"client"`
	Name   string `json:"name"`
}

// Duration is a time.Duration written as text ("30s") in JSON.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want text like \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (f *federation) dir() string { return filepath.Join(f.srv.opt.DataDir, "federations", f.meta.ID) }

// saveMeta writes meta.json. Called with f.mu held.
func (f *federation) saveMeta() error {
	b, err := json.MarshalIndent(f.meta, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.dir(), 0o700); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(f.dir(), "meta.json"), b); err != nil {
		return fmt.Errorf("federation %s: save: %w", f.meta.ID, err)
	}
	return nil
}
