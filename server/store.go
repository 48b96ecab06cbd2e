package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
)

// writeFileAtomic replaces path with data so that a crash at any moment
// leaves either the old file or the new one: temporary file, fsync,
// rename, fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	return writeFileAtomicFrom(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileAtomicFrom is writeFileAtomic with the contents written by
// write, through a buffer: a checkpoint streams its dual values to disk
// instead of building them in memory first.
func writeFileAtomicFrom(path string, write func(io.Writer) error) error {
	if err := diskCheck("write", path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := bw.Flush(); err != nil {
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
	ViewerHash   string          `json:"viewer_hash,omitempty"`
	InviteHash   string          `json:"invite_hash"`
	// MaxParticipants bounds the invite's registrations (0: none
	// declared; CreateRequest.MaxParticipants).
	MaxParticipants int `json:"max_participants,omitempty"`
	// Sessions are the registrations of data directories written before
	// they moved to sessions.jsonl (read, never written).
	Sessions []sessionMeta `json:"sessions,omitempty"`
	Stopped  bool          `json:"stopped,omitempty"`
	Demo     bool          `json:"demo,omitempty"`
	PStar    float64       `json:"pstar,omitempty"`
	// Creator is a hash of who created it (the create token, or the
	// address under open creation), for the per-creator quota.
	Creator string `json:"creator,omitempty"`
	// Ended is when it finished or stopped: it is removed a retention
	// period later.
	Ended time.Time `json:"ended,omitzero"`
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

// sessionsFile is the append-only log of registrations: one JSON line per
// participant, so registering costs one short append, not a rewrite of
// everything registered before.
const sessionsFile = "sessions.jsonl"

// appendSession writes a registration to the log (Called with f.mu held)
// and returns its sequence number: the welcome goes out only once
// f.sessLog.sync has made it durable (conn.durable), so that a server
// killed after the welcome still knows the session. The fsync happens in
// the new participant's writer, outside f.mu, and one fsync covers every
// line written before it: registrations arriving together share it
// instead of queueing behind one fsync each.
func (f *federation) appendSession(sm sessionMeta) (uint64, error) {
	b, err := json.Marshal(sm)
	if err != nil {
		return 0, err
	}
	seq, err := f.sessLog.append(f.dir(), append(b, '\n'))
	if err != nil {
		return 0, fmt.Errorf("federation %s: sessions: %w", f.meta.ID, err)
	}
	return seq, nil
}

// sessionLog is sessions.jsonl held open, with group commit.
type sessionLog struct {
	mu      sync.Mutex
	cond    *sync.Cond
	fh      *os.File
	written uint64 // lines written
	synced  uint64 // lines known durable
	syncing bool   // an fsync is under way (without mu)
	closed  bool
}

// append writes one line (no fsync) and returns its sequence number.
func (l *sessionLog) append(dir string, line []byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("closed")
	}
	if l.fh == nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, err
		}
		fh, err := os.OpenFile(filepath.Join(dir, sessionsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return 0, err
		}
		l.fh = fh
	}
	if err := diskCheck("write", l.fh.Name()); err != nil {
		return 0, err
	}
	if _, err := l.fh.Write(line); err != nil {
		return 0, err
	}
	l.written++
	return l.written, nil
}

// sync returns once line seq is on disk: the first caller fsyncs for all
// lines written so far, the others wait for it.
func (l *sessionLog) sync(seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
	}
	for l.synced < seq {
		if l.syncing {
			l.cond.Wait()
			continue
		}
		if l.fh == nil {
			return errors.New("sessions log closed")
		}
		l.syncing = true
		target, fh := l.written, l.fh
		l.mu.Unlock()
		err := diskCheck("sync", fh.Name())
		if err == nil {
			err = fh.Sync()
		}
		l.mu.Lock()
		l.syncing = false
		l.cond.Broadcast()
		if err != nil {
			return err
		}
		l.synced = max(l.synced, target)
	}
	return nil
}

// close syncs and closes the log; later appends fail.
func (l *sessionLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncing {
		l.cond.Wait() // set by the sync under way
	}
	l.closed = true
	if l.fh == nil {
		return nil
	}
	err := l.fh.Sync()
	if err == nil {
		l.synced = l.written
	}
	if cerr := l.fh.Close(); err == nil {
		err = cerr
	}
	l.fh = nil
	if l.cond != nil {
		l.cond.Broadcast()
	}
	return err
}

// readSessions reads the registrations log. A last line cut short by a
// crash is the registration whose welcome never went out: it is dropped.
func readSessions(dir string) ([]sessionMeta, error) {
	b, err := os.ReadFile(filepath.Join(dir, sessionsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []sessionMeta
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var sm sessionMeta
		if err := json.Unmarshal(line, &sm); err != nil || sm.Hash == "" || sm.Client < 0 {
			if i == len(lines)-1 {
				break // torn last line
			}
			return nil, fmt.Errorf("%s line %d: not a session record", filepath.Join(dir, sessionsFile), i+1)
		}
		out = append(out, sm)
	}
	return out, nil
}

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
