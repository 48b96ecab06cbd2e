package server

import (
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hyfed/hyfed/shared/protocol"
	"github.com/labstack/echo/v4"
)

// janitorEvery is how often the server looks for federations to remove.
var janitorEvery = time.Minute

// markEnded records when the federation finished or stopped (once): the
// retention period counts from then. Called with f.mu held.
func (f *federation) markEnded() {
	f.ended.Store(true)
	if !f.meta.Ended.IsZero() {
		return
	}
	f.meta.Ended = time.Now().UTC()
	if err := f.saveMeta(); err != nil {
		f.log.Error("cannot record the end", "error", err)
	}
}

// janitor removes federations that never started within
// Options.UnstartedTTL, and ended ones Options.Retention after their end.
func (s *Server) janitor() {
	defer close(s.janitorDone)
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.sweep(time.Now())
		}
	}
}

// sweep removes what has outlived its limit at time now. A federation not
// loaded since the server started is judged by its record alone: loading
// it only to remove it would cost what lazy loading saves.
func (s *Server) sweep(now time.Time) {
	for _, f := range s.snapshot() {
		if why := s.expired(f, now); why != "" {
			s.log.Info("removing federation", "id", f.meta.ID, "why", why)
			s.remove(f)
		}
	}
}

// expired says why f is to be removed at time now ("" if not).
func (s *Server) expired(f *federation, now time.Time) string {
	var created, ended time.Time
	var started bool
	if f.loaded.Load() {
		f.mu.Lock()
		created, ended, started = f.meta.Created, f.meta.Ended, f.coord != nil && f.coord.Started()
		f.mu.Unlock()
	} else {
		created, ended = f.meta.Created, f.meta.Ended
		// A federation that ever ran a round has its checkpoint on disk.
		_, err := os.Stat(filepath.Join(f.dir(), "round.bin"))
		started = err == nil
	}
	switch {
	case !ended.IsZero() && now.Sub(ended) > s.opt.Retention:
		return "ended more than the retention period ago"
	case ended.IsZero() && !started && now.Sub(created) > s.opt.UnstartedTTL:
		return "never started"
	}
	return ""
}

// remove ends a federation and deletes its folder.
func (s *Server) remove(f *federation) {
	s.mu.Lock()
	if s.feds[f.meta.ID] == f {
		delete(s.feds, f.meta.ID)
	}
	delete(s.taken, f.meta.ID)
	s.mu.Unlock()
	f.close()
	if err := os.RemoveAll(f.dir()); err != nil {
		s.log.Error("cannot delete a federation's folder", "id", f.meta.ID, "error", err)
	}
}

// handleDelete is DELETE /api/federations/:id (admin token).
func (s *Server) handleDelete(c echo.Context) error {
	f, err := s.adminOf(c, "deleting a federation")
	if err != nil {
		return err
	}
	f.mu.Lock()
	for _, cn := range f.conns {
		cn.send(protocol.Message{Kind: protocol.KindError, Code: protocol.CodeStopped, Close: true, Err: "the organizer deleted the federation"})
	}
	f.mu.Unlock()
	s.remove(f)
	s.log.Info("federation deleted by its organizer", "id", f.meta.ID)
	return c.NoContent(http.StatusNoContent)
}
